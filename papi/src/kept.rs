//! What the process keeps for C: the descriptions and names whose pointers a program holds
//! after the call that gave them, past `PAPI_shutdown` too (PAPI's point at its components'
//! static descriptions). One store, in the process's PAPI behind the library's lock
//! (`library::keep`); each value is leaked once and lives as long as the process.

use std::ffi::CStr;

use counterhal_system::System;

use crate::device_types::DevType;
use crate::info::{ComponentInfo, ExeInfo, HwInfo, ShlibInfo};
use crate::release::ComponentInfo72;

/// The values kept for C, each once by its contents.
#[derive(Default)]
pub struct Kept {
    /// The component descriptions given out: an init after each shutdown makes a component's
    /// description again, so they are as many as the different descriptions, not the inits.
    descriptions: Vec<&'static ComponentInfo>,
    /// The names descriptions point at (a component's PMU names).
    names: Vec<&'static CStr>,
    /// The hardware facts, gathered at the first call that asks (`PAPI_get_hardware_info`).
    hardware: Option<&'static HwInfo>,
    /// The executable's facts, gathered at the first call that asks.
    executable: Option<&'static ExeInfo>,
    /// The shared libraries mapped when first asked.
    shared_libraries: Option<&'static ShlibInfo>,
    /// The descriptions in PAPI 7.2's layout, one per component index, written again at each
    /// call (PAPI's pointer is to the component's own: a program sees it as it stands).
    views: Vec<(i32, &'static mut ComponentInfo72)>,
    /// This machine's device types, whose addresses are the device interface's handles.
    device_types: Option<&'static [DevType; 3]>,
}

impl Kept {
    /// An empty store (the process's, before any call).
    pub const fn new() -> Self {
        Kept {
            descriptions: Vec::new(),
            names: Vec::new(),
            hardware: None,
            executable: None,
            shared_libraries: None,
            views: Vec::new(),
            device_types: None,
        }
    }

    /// The hardware facts of `system` ([`crate::info::hardware`]), gathered once.
    pub fn hardware(&mut self, system: &System) -> &'static HwInfo {
        self.hardware
            .get_or_insert_with(|| Box::leak(Box::new(crate::info::hardware(system))))
    }

    /// The device types of `system` ([`crate::device_types::this_machine`]), gathered once.
    pub fn device_types(&mut self, system: &System) -> &'static [DevType; 3] {
        self.device_types
            .get_or_insert_with(|| Box::leak(Box::new(crate::device_types::this_machine(system))))
    }

    /// The executable's facts ([`crate::info::executable`], from `system`), gathered once.
    pub fn executable(&mut self, system: &System) -> &'static ExeInfo {
        self.executable
            .get_or_insert_with(|| Box::leak(Box::new(crate::info::executable(system))))
    }

    /// The shared libraries ([`crate::info::shared_libraries`], from `system`), gathered once.
    pub fn shared_libraries(&mut self, system: &System) -> &'static ShlibInfo {
        self.shared_libraries
            .get_or_insert_with(|| Box::leak(Box::new(crate::info::shared_libraries(system))))
    }

    /// Component `cidx`'s description `fresh` in PAPI 7.2's layout, in the one place kept for
    /// the component: made at the first call, written again at each.
    pub fn view(&mut self, cidx: i32, fresh: ComponentInfo72) -> *const ComponentInfo72 {
        if let Some((_, view)) = self.views.iter_mut().find(|(c, _)| *c == cidx) {
            **view = fresh;
            return &**view;
        }
        let view: &'static mut ComponentInfo72 = Box::leak(Box::new(fresh));
        let pointer: *const ComponentInfo72 = &*view;
        self.views.push((cidx, view));
        pointer
    }

    /// `info` as a description that lives for the process: one kept with the same contents,
    /// else `info` kept.
    pub fn description(&mut self, info: ComponentInfo) -> &'static ComponentInfo {
        if let Some(same) = self.descriptions.iter().find(|kept| ***kept == info) {
            return same;
        }
        let new: &'static ComponentInfo = Box::leak(Box::new(info));
        self.descriptions.push(new);
        new
    }

    /// `name` as a C string that lives for the process, kept once per name (a name with a
    /// NUL byte is kept empty).
    pub fn name(&mut self, name: &str) -> &'static CStr {
        if let Some(same) = self.names.iter().find(|k| k.to_bytes() == name.as_bytes()) {
            return same;
        }
        let new: &'static CStr = Box::leak(
            std::ffi::CString::new(name)
                .unwrap_or_default()
                .into_boxed_c_str(),
        );
        self.names.push(new);
        new
    }
}
