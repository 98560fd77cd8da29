//! The agent loop (docs/agents.md: the pipeline's gate and loop, the prompt, the caps) as a pure
//! state machine. The engine persists [`Loop`] on the agent's step run after every transition and
//! performs the [`Action`]s it returns: each model turn and each tool call is a step run of its own
//! on the Tool's typed pool, so the loop is as durable as any step. Nothing here does I/O.
//!
//! - [`gate`]: the deterministic policy gate. The model is offered only the tools it allows; a
//!   call to anything else is refused without running, and recorded.
//! - [`assemble`]: the five prompt layers, in order (AGT-5).
//! - [`Loop::answered`] / [`Loop::tool_settled`]: what follows a model answer or a tool result,
//!   with the caps (`maxIterations`, `maxToolCalls`, the total timeout) ending the loop with the
//!   best answer so far and a recorded reason, never a hang.

mod calls;
mod policy;
mod prompt;
pub mod router;
mod state;
mod suggestions;
mod tools;

pub use policy::{gate, Caller, Forbidden, PolicyDecision};
pub use prompt::{
    assemble, layers_from_memory, Layers, Message, ModelAnswer, ToolCall, IMMUTABLE_CORE,
    TOOL_GUARDRAIL,
};
pub use state::{
    Action, ApprovalDecision, ApprovalRequest, Caps, Decision, FinishReason, Held, Loop, Money,
    Pending, Refusal, MAX_APPROVAL_TTL_SECONDS, NO_ANSWER, TURN_OUTPUT_TOKENS,
};
pub use suggestions::memory_suggestions;
pub use tools::{call_name, parse_arguments, AgentTool, CallKind};

#[cfg(test)]
mod tests;
