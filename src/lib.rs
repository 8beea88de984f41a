//! counterhal facade (skeleton)
pub use counterhal_hal as hal;
