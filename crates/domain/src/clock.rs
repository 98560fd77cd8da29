//! What time it is for the windows that count by the clock: hourly quota windows (AGT-10) and
//! daily spend windows (AGT-14). Production reads the system clock; tests pin one clock into
//! both the API (`App::with_clock`) and the engine (`Engine::with_clock`) so a window never
//! rolls over in the middle of the starts and spends a test races.

use chrono::{DateTime, Utc};

#[derive(Clone)]
pub struct Clock(std::sync::Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>);

impl Clock {
    pub fn system() -> Self {
        Self::from_fn(Utc::now)
    }

    pub fn from_fn(f: impl Fn() -> DateTime<Utc> + Send + Sync + 'static) -> Self {
        Self(std::sync::Arc::new(f))
    }

    pub fn now(&self) -> DateTime<Utc> {
        (self.0)()
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::system()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Clock")
    }
}
