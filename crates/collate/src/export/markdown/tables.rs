//! What `report.md` of a node run is written from: the node's
//! [`Report`] and its [`NodeParts`], as they are. Every section reads the
//! figures where the report holds them; nothing here copies a field.

use crate::report::{NodeParts, Report};

/// A node run's report, as the sections of `report.md` read it.
#[derive(Clone, Copy)]
pub struct NodeReport<'a> {
    /// The figures a node and a rack both have.
    pub report: &'a Report,
    /// What only a node has.
    pub node: &'a NodeParts,
}

impl NodeReport<'_> {
    /// The lifecycle edges and the events not measured, where the run
    /// recorded a process's lifecycle (None: the report says nothing of
    /// them).
    pub fn lifecycle(&self) -> Option<(&[powerlab_analysis::lifecycle::LifecycleEdge], &[String])> {
        (self.node.lifecycle_moments > 0).then_some((
            self.node.lifecycle.as_slice(),
            self.node.lifecycle_refused.as_slice(),
        ))
    }
}
