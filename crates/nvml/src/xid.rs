//! Xid (critical error) events through an NVML event set, polled without
//! blocking. nvml-wrapper's `EventSet` borrows the `Nvml` it came from, so
//! this holds the raw set instead.
#![allow(unsafe_code)] // raw NVML event-set calls; each states its invariant

use nvml_wrapper::Nvml;
use nvml_wrapper_sys::bindings::{
    nvmlEventData_t, nvmlEventSet_t, nvmlEventTypeXidCriticalError, nvmlReturn_enum_NVML_SUCCESS,
};

/// A registered event set for one GPU.
pub struct XidListener {
    // The raw set, as an address so the listener is Send (NVML handles are
    // usable from any thread).
    set: usize,
}

impl XidListener {
    /// Registers for critical Xid errors on the device at `index`; None where unsupported.
    pub fn new(nvml: &Nvml, index: u32) -> Option<XidListener> {
        let lib = nvml.lib();
        let dev = nvml.device_by_index(index).ok()?;
        let create = lib.nvmlEventSetCreate.as_ref().ok()?;
        let register = lib.nvmlDeviceRegisterEvents.as_ref().ok()?;
        let mut set: nvmlEventSet_t = std::ptr::null_mut();
        // SAFETY: the symbol exists; `set` is a valid out-pointer.
        if unsafe { create(&mut set) } != nvmlReturn_enum_NVML_SUCCESS {
            return None;
        }
        // SAFETY: `dev` is a live handle of this NVML instance; `set` was just created.
        if unsafe { register(dev.handle(), u64::from(nvmlEventTypeXidCriticalError), set) }
            != nvmlReturn_enum_NVML_SUCCESS
        {
            if let Ok(free) = lib.nvmlEventSetFree.as_ref() {
                // SAFETY: `set` was created above and is freed once.
                unsafe { free(set) };
            }
            return None;
        }
        Some(XidListener { set: set as usize })
    }

    /// Every pending event: (event type, event data = the Xid code).
    pub fn poll(&self, nvml: &Nvml) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let Ok(wait) = nvml.lib().nvmlEventSetWait_v2.as_ref() else {
            return out;
        };
        for _ in 0..16 {
            // SAFETY: a zeroed event-data struct is a valid out-parameter.
            let mut data: nvmlEventData_t = unsafe { std::mem::zeroed() };
            // SAFETY: `set` is a live event set; timeout 0 never blocks.
            let rc = unsafe { wait(self.set as nvmlEventSet_t, &mut data, 0) };
            if rc != nvmlReturn_enum_NVML_SUCCESS {
                break;
            }
            out.push((data.eventType, data.eventData));
        }
        out
    }
}
