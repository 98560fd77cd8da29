//! Processes: workflows as data, versioned (PROC-1..7, PROC-9).

mod checks;
mod definition;
mod versions;

pub use checks::{parallel_groups, Target, Targets};
pub use definition::{
    AgentSpec, Definition, Execution, InteractionMode, Mode, Quota, Step, StepOutput, Subject,
    DEFAULT_MAX_RECURSION_DEPTH, MAX_STEPS, PROCESS_MAX_TIMEOUT_MS, TOOL_DEFAULT_TIMEOUT_MS,
    TOOL_MAX_TIMEOUT_MS,
};
pub use versions::{
    decide_create, decide_update, merge_patch, NewProcess, Process, ProcessPatch, Update,
};

#[cfg(test)]
mod tests;
