//! `Checked<T>`: a value that has passed the domain rules. Only this crate can make one, so the
//! graph crate's write methods, which take `Checked<_>`, cannot be handed an unchecked change.

#[derive(Debug, Clone)]
pub struct Checked<T>(T);

impl<T> Checked<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(value)
    }

    pub fn get(&self) -> &T {
        &self.0
    }

    pub fn into_inner(self) -> T {
        self.0
    }
}
