//! Xid (critical error) events through an NVML event set, polled without
//! blocking. nvml-wrapper's `EventSet` borrows the `Nvml` it came from, so
//! this holds the raw set beside an `Arc` of that `Nvml`, and frees the set
//! when dropped.
#![allow(unsafe_code)] // raw NVML event-set calls; each states its invariant

use nvml_wrapper::Nvml;
use nvml_wrapper_sys::bindings::{
    nvmlEventData_t, nvmlEventSet_t, nvmlEventTypeXidCriticalError, nvmlReturn_enum_NVML_SUCCESS,
};
use std::sync::Arc;

/// A raw NVML event set that may move to another thread.
struct RawEventSet(nvmlEventSet_t);

// SAFETY: NVML event sets are opaque handles that the library allows to be
// used from any thread; the listener owns this one and frees it once.
unsafe impl Send for RawEventSet {}

/// A registered event set for one GPU, freed on drop.
pub struct XidListener {
    nvml: Arc<Nvml>,
    set: RawEventSet,
}

impl XidListener {
    /// Registers for critical Xid errors on the device at `index`; None where unsupported.
    pub fn new(nvml: &Arc<Nvml>, index: u32) -> Option<XidListener> {
        let lib = nvml.lib();
        let dev = nvml.device_by_index(index).ok()?;
        let create = lib.nvmlEventSetCreate.as_ref().ok()?;
        let register = lib.nvmlDeviceRegisterEvents.as_ref().ok()?;
        let mut set: nvmlEventSet_t = std::ptr::null_mut();
        // SAFETY: the symbol exists; `set` is a valid out-pointer.
        if unsafe { create(&mut set) } != nvmlReturn_enum_NVML_SUCCESS {
            return None;
        }
        // From here on the set is owned: every early return frees it in Drop.
        let listener = XidListener {
            nvml: nvml.clone(),
            set: RawEventSet(set),
        };
        // SAFETY: `dev` is a live handle of this NVML instance; `set` was just created.
        let rc = unsafe { register(dev.handle(), u64::from(nvmlEventTypeXidCriticalError), set) };
        (rc == nvmlReturn_enum_NVML_SUCCESS).then_some(listener)
    }

    /// Every pending event: (event type, event data = the Xid code).
    pub fn poll(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let Ok(wait) = self.nvml.lib().nvmlEventSetWait_v2.as_ref() else {
            return out;
        };
        for _ in 0..16 {
            // SAFETY: a zeroed event-data struct is a valid out-parameter.
            let mut data: nvmlEventData_t = unsafe { std::mem::zeroed() };
            // SAFETY: `set` is a live event set of `self.nvml`; timeout 0 never blocks.
            let rc = unsafe { wait(self.set.0, &mut data, 0) };
            if rc != nvmlReturn_enum_NVML_SUCCESS {
                break;
            }
            out.push((data.eventType, data.eventData));
        }
        out
    }
}

impl Drop for XidListener {
    fn drop(&mut self) {
        if let Ok(free) = self.nvml.lib().nvmlEventSetFree.as_ref() {
            // SAFETY: the set was created by `self.nvml`, which is still alive
            // (held here), and is freed exactly once, here.
            let _ = unsafe { free(self.set.0) };
        }
    }
}
