// An agent's answer as Markdown: marked turns it into HTML, DOMPurify keeps only harmless markup
// (no scripts, no event handlers, no `javascript:` links), code blocks that name their language
// are highlighted by highlight.js, and every code block gets a Copy button. The libraries are
// vendored (see vendor/README.md); nothing is fetched from elsewhere.

import hljs from './highlight.min.js';
import { marked } from './marked.esm.js';
import DOMPurify from './purify.es.mjs';
import { h } from './dom.js';

const options = { gfm: true, breaks: true, async: false };

// Answers sit inside the console's own page, so their markup must not look like the console's:
// no ids or names (the console finds #message, #send… by id), no data-* attributes, no classes
// but a code block's `language-…`, no inline styles (the page's policy refuses them anyway), and
// no controls that could submit or capture input.
const config = {
  RETURN_DOM_FRAGMENT: true,
  ALLOW_DATA_ATTR: false,
  FORBID_TAGS: ['style', 'form', 'button', 'textarea', 'select', 'option', 'dialog'],
  FORBID_ATTR: ['style', 'id', 'name', 'form', 'formaction'],
};

DOMPurify.addHook('uponSanitizeAttribute', (node, data) => {
  if (data.attrName === 'class' && !(node.nodeName === 'CODE' && /^language-[\w+#.-]+$/.test(data.attrValue))) {
    data.keepAttr = false;
  }
});
// Links open elsewhere, and the page they open gets no hold on this one.
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.nodeName === 'A' && node.hasAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

/** Copies `text` (a code block's, a message's); where the clipboard is out of reach (not a
 * secure context, or refused), selects `node` so the reader can copy it themselves. */
export async function copyText(text, node, button) {
  const code = node;
  let said = 'Copied';
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const range = document.createRange();
    range.selectNodeContents(code);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    let copied = false;
    try { copied = document.execCommand('copy'); } catch { copied = false; }
    said = copied ? 'Copied' : 'Selected: press Ctrl+C';
  }
  button.textContent = said;
  setTimeout(() => { button.textContent = 'Copy'; }, 1500);
}

/** `text` as Markdown: a `div.md` of sanitized markup, ready for `h` or `mount`. */
export function markdown(text) {
  const fragment = DOMPurify.sanitize(marked.parse(String(text ?? ''), options), config);
  const root = h('div.md');
  root.append(fragment);
  for (const pre of root.querySelectorAll('pre')) {
    const code = pre.querySelector('code') || pre;
    // A fence that names its language is highlighted. highlight.js reads the block's text (the
    // sanitized markup has no other) and writes it back escaped, in spans of its classes only.
    const language = [...code.classList].find((c) => c.startsWith('language-'))?.slice('language-'.length);
    if (language && hljs.getLanguage(language)) hljs.highlightElement(code);
    const button = h('button.copy', {
      type: 'button', 'aria-label': 'Copy code', onclick: () => copyText(code.textContent, code, button),
    }, 'Copy');
    const block = h('div.code-block');
    pre.replaceWith(block);
    block.append(button, pre);
  }
  return root;
}
