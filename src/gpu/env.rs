//! The environment fingerprint: the device facts from CUDA, clocks and state from NVML
//! (nvml-wrapper). NVML being unavailable is not fatal: the fields stay empty.

use nvml_wrapper::Nvml;
use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};

use super::compile::Arch;
use crate::results::{Environment, GpuState, gpu_slug};

/// Facts about the device that measurement and reports need.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    pub name: String,
    /// NVML-style UUID, `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    pub uuid: String,
    pub arch: Arch,
    pub sm_count: u32,
    pub l2_bytes: u64,
    pub max_smem_optin: u32,
    /// e.g. 13000 for CUDA 13.0.
    pub driver_cuda_version: i32,
    pub nvrtc_version: (i32, i32),
}

/// Throttle reasons that mean the clocks were held down (idle and application-clock
/// settings are not slowdowns of a running kernel).
pub(crate) const SLOWDOWN_REASONS: &[&str] = &[
    "SW_POWER_CAP",
    "HW_SLOWDOWN",
    "SW_THERMAL_SLOWDOWN",
    "HW_THERMAL_SLOWDOWN",
    "HW_POWER_BRAKE_SLOWDOWN",
    "SYNC_BOOST",
];

/// An NVML handle for the device with this UUID.
pub struct Monitor {
    nvml: Option<Nvml>,
    uuid: String,
}

impl Monitor {
    pub fn new(uuid: &str) -> Monitor {
        Monitor {
            nvml: Nvml::init().ok(),
            uuid: uuid.to_owned(),
        }
    }

    /// The driver version string NVML reports, e.g. "580.159.04".
    pub(crate) fn driver_version(&self) -> Option<String> {
        self.nvml.as_ref()?.sys_driver_version().ok()
    }

    /// The SM clock now, in MHz.
    pub(crate) fn sm_clock_mhz(&self) -> Option<u32> {
        let nvml = self.nvml.as_ref()?;
        nvml.device_by_uuid(self.uuid.as_str())
            .ok()?
            .clock_info(Clock::SM)
            .ok()
    }

    /// The highest SM clock the device supports, in MHz.
    pub(crate) fn max_sm_clock_mhz(&self) -> Option<u32> {
        let nvml = self.nvml.as_ref()?;
        nvml.device_by_uuid(self.uuid.as_str())
            .ok()?
            .max_clock_info(Clock::SM)
            .ok()
    }

    /// A reader of this device's energy counter and power samples (src/energy.rs), holding
    /// the device handle so each read is one NVML call.
    pub(crate) fn energy_reader(&self) -> Option<EnergyReader<'_>> {
        let nvml = self.nvml.as_ref()?;
        let device = nvml.device_by_uuid(self.uuid.as_str()).ok()?;
        Some(EnergyReader { device })
    }

    /// The compute processes NVML sees on this device now: (pid, GPU memory in bytes where
    /// NVML says). The pids are as the driver knows them: in a container with a pid namespace
    /// of its own they are the host's, not this process's view (`run::sharing`'s
    /// process watch handles that). `Err`: why NVML cannot say.
    pub(crate) fn compute_processes(&self) -> Result<Vec<(u32, Option<u64>)>, String> {
        use nvml_wrapper::enums::device::UsedGpuMemory;
        let nvml = self.nvml.as_ref().ok_or("NVML could not be initialised")?;
        let dev = nvml
            .device_by_uuid(self.uuid.as_str())
            .map_err(|e| format!("NVML cannot find the GPU {}: {e}", self.uuid))?;
        // The list can grow between NVML's count and its fetch: one more try.
        let list = dev
            .running_compute_processes()
            .or_else(|_| dev.running_compute_processes())
            .map_err(|e| format!("NVML cannot list the GPU's compute processes: {e}"))?;
        Ok(list
            .into_iter()
            .map(|p| {
                let used = match p.used_gpu_memory {
                    UsedGpuMemory::Used(b) => Some(b),
                    UsedGpuMemory::Unavailable => None,
                };
                (p.pid, used)
            })
            .collect())
    }

    /// Reads clocks, temperature, power and throttle reasons now.
    pub fn state(&self) -> Option<GpuState> {
        let nvml = self.nvml.as_ref()?;
        let dev = nvml.device_by_uuid(self.uuid.as_str()).ok()?;
        let reasons = dev
            .current_throttle_reasons()
            .map(|r| {
                (r - ThrottleReasons::GPU_IDLE)
                    .iter_names()
                    .map(|(name, _)| name.to_owned())
                    .collect()
            })
            .unwrap_or_default();
        Some(GpuState {
            sm_clock_mhz: dev.clock_info(Clock::SM).ok(),
            mem_clock_mhz: dev.clock_info(Clock::Memory).ok(),
            temperature_c: dev.temperature(TemperatureSensor::Gpu).ok(),
            power_w: dev.power_usage().ok().map(|mw| f64::from(mw) / 1000.0),
            throttle_reasons: reasons,
        })
    }
}

/// NVML's energy readings of one device.
pub(crate) struct EnergyReader<'a> {
    device: nvml_wrapper::Device<'a>,
}

impl EnergyReader<'_> {
    /// The board's total energy since the driver loaded, mJ (None: not supported).
    pub(crate) fn energy_mj(&self) -> Option<u64> {
        self.device.total_energy_consumption().ok()
    }

    /// NVML's power samples newer than `since_us` (CPU time, µs since the epoch): each as
    /// (time µs, mW).
    pub(crate) fn power_samples(&self, since_us: u64) -> Vec<(u64, f64)> {
        use nvml_wrapper::enum_wrappers::device::Sampling;
        use nvml_wrapper::enums::device::SampleValue;
        self.device
            .samples(Sampling::Power, since_us)
            .map(|v| {
                v.into_iter()
                    .filter_map(|s| {
                        let mw = match s.value {
                            SampleValue::U32(x) => f64::from(x),
                            SampleValue::U64(x) => x as f64,
                            SampleValue::F64(x) => x,
                            SampleValue::I64(x) => x as f64,
                        };
                        (mw.is_finite() && mw > 0.0).then_some((s.timestamp, mw))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The environment record of a run on this device, with the state read now as "before".
pub(crate) fn environment(info: &DeviceInfo, monitor: &Monitor) -> Environment {
    let cuda = info.driver_cuda_version;
    Environment {
        gpu_name: info.name.clone(),
        gpu_slug: gpu_slug(&info.name),
        gpu_uuid: Some(info.uuid.clone()),
        compute_capability: format!("{}.{}", info.arch.major, info.arch.minor),
        sm_count: Some(info.sm_count),
        l2_bytes: Some(info.l2_bytes),
        driver_version: monitor.driver_version(),
        cuda_driver_version: Some(format!("{}.{}", cuda / 1000, (cuda % 1000) / 10)),
        nvrtc_version: Some(format!("{}.{}", info.nvrtc_version.0, info.nvrtc_version.1)),
        state_before: monitor.state(),
        state_after: None,
    }
}

/// Whether any of these reasons is a real slowdown.
pub(crate) fn throttled(reasons: &[String]) -> Vec<String> {
    reasons
        .iter()
        .filter(|r| SLOWDOWN_REASONS.contains(&r.as_str()))
        .cloned()
        .collect()
}
