//! The endpoints' names, by the index under which the intervals keep their
//! parts: what the outputs written during the run (the interval log, the
//! CSV rows, the dashboard) label each endpoint's figures with.

use std::sync::Arc;

use crate::cli::config::Config;
use crate::script::StepNames;

/// A requests file's endpoints (with `--by-endpoint`, or two or more
/// names), known before the run; or a flow's steps, named as the visits
/// take them, a list that grows during the run.
#[derive(Clone, Debug, Default)]
pub struct EndpointNames {
    fixed: Vec<String>,
    steps: Option<Arc<StepNames>>,
}

impl EndpointNames {
    pub fn of(cfg: &Config) -> EndpointNames {
        let fixed = cfg
            .run
            .replay
            .as_ref()
            .filter(|r| r.by_endpoint)
            .map(|r| r.set.endpoints().to_vec())
            .unwrap_or_default();
        EndpointNames { fixed, steps: None }
    }

    /// The flow's step names, shared with the visits that add to them.
    pub fn take_steps(&mut self, steps: &Arc<StepNames>) {
        self.steps = Some(Arc::clone(steps));
    }

    /// Every name so far, by index.
    pub fn now(&self) -> Vec<String> {
        match &self.steps {
            Some(steps) => steps.all(),
            None => self.fixed.clone(),
        }
    }
}
