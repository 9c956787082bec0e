//! The environment fingerprint: the device facts from CUDA, clocks and state from NVML
//! (nvml-wrapper). NVML being unavailable is not fatal: the fields stay empty.
//!
//! Also the facts `ci-gate env`'s pre-flight checks judge ([`driver_cuda_version`],
//! [`nvrtc_found`], [`probe_sandbox`]), each read without a GPU and without panicking where a
//! library is missing.

use std::path::PathBuf;

use nvml_wrapper::Nvml;
use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};

use crate::ffi;
use crate::kernel::compile::Arch;
use crate::kernel::sandbox::{self, Outcome, Request};
use crate::results::{Environment, GpuState, gpu_slug};

/// Why the installed driver's CUDA version is unknown (each shown as one clause).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub(crate) enum DriverVersionError {
    #[error("no NVIDIA driver found (libcuda.so could not be loaded)")]
    NoDriver,
    /// `cuDriverGetVersion` failed: the driver's error, as cudarc shows it.
    #[error("the NVIDIA driver did not report its CUDA version ({0})")]
    NotReported(String),
}

/// The CUDA version the installed driver supports (1000 × major + 10 × minor, e.g. 13000),
/// read with `cuDriverGetVersion`, which needs no GPU and no `cuInit`.
pub(crate) fn driver_cuda_version() -> Result<i32, DriverVersionError> {
    if !ffi::driver_present() {
        return Err(DriverVersionError::NoDriver);
    }
    ffi::driver_cuda_version().map_err(|e| DriverVersionError::NotReported(format!("{e:?}")))
}

/// The NVRTC this process loads, as compiling would load it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NvrtcFound {
    /// (major, minor) as NVRTC reports it; None where it did not answer.
    pub version: Option<(i32, i32)>,
    /// The directory it was loaded from (/proc/self/maps), where that could be read.
    pub dir: Option<PathBuf>,
}

/// The NVRTC the loader finds (the names cudarc tries: `libnvrtc.so`, then
/// `libnvrtc.so.MAJOR` and older majors), or None where there is none. Loads it: a few ms.
pub(crate) fn nvrtc_found() -> Option<NvrtcFound> {
    if !ffi::nvrtc_present() {
        return None;
    }
    Some(NvrtcFound {
        version: ffi::nvrtc_version(),
        dir: sandbox::nvrtc_library_dir(),
    })
}

/// How the NVRTC sandbox answered a test compile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SandboxProbe {
    /// The test kernel compiled to a CUBIN with the sandbox enforced (Landlock and seccomp).
    Confined,
    /// The sandbox cannot be enforced here: why (the child refused to compile).
    NotEnforceable(String),
    /// The probe itself failed (the child did not start or answer, NVRTC failed): why.
    Failed(String),
}

/// A kernel that reads nothing: what the sandbox probe compiles.
const PROBE_SOURCE: &str =
    "extern \"C\" __global__ void ci_gate_env_probe(float* out) { out[0] = 1.0f; }\n";

/// Whether the NVRTC sandbox (`kernel::sandbox`) can be enforced here, found by doing what every
/// compile of a kernel does: a sandboxed child run from this executable, with NVRTC's
/// directory and nothing else, applies Landlock and the seccomp filter and compiles
/// [`PROBE_SOURCE`] for sm_89, never unconfined (the runner owner's opt-out is not passed:
/// the answer says whether the sandbox holds, not whether the owner allows it not to). Costs
/// one process and one tiny compile (well under a second). Callers check [`nvrtc_found`]
/// first.
pub(crate) fn probe_sandbox() -> SandboxProbe {
    let Some(dir) = sandbox::nvrtc_library_dir() else {
        return SandboxProbe::Failed(
            "the directory libnvrtc was loaded from is not in /proc/self/maps".into(),
        );
    };
    let exe = match sandbox::compiler_executable() {
        Ok(exe) => exe,
        Err(e) => {
            return SandboxProbe::Failed(format!("the ci-gate executable cannot be found: {e}"));
        }
    };
    let request = Request {
        name: "ci-gate-env-probe.cu".into(),
        source: PROBE_SOURCE.into(),
        options: vec!["--gpu-architecture=sm_89".into()],
        allow_unconfined: false,
    };
    match sandbox::compile(&exe, &request, &dir, sandbox::TIMEOUT) {
        Err(failure) => SandboxProbe::Failed(failure.to_string()),
        Ok(answer) => match (answer.unconfined, answer.outcome) {
            (Some(why), _) => SandboxProbe::NotEnforceable(why),
            (None, Outcome::Cubin { cubin, .. }) if cubin.starts_with(b"\x7fELF") => {
                SandboxProbe::Confined
            }
            (None, Outcome::Cubin { .. }) => {
                SandboxProbe::Failed("NVRTC's output is not a CUBIN".into())
            }
            (None, Outcome::Failed(_)) => {
                SandboxProbe::Failed("NVRTC did not compile the test kernel in the sandbox".into())
            }
            (None, Outcome::Error(why)) => SandboxProbe::Failed(why),
        },
    }
}

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
    pub(crate) fn compute_processes(
        &self,
    ) -> Result<Vec<(u32, Option<u64>)>, crate::backend::ProcessesUnlisted> {
        use crate::backend::ProcessesUnlisted;
        use nvml_wrapper::enums::device::UsedGpuMemory;
        let nvml = self
            .nvml
            .as_ref()
            .ok_or_else(|| ProcessesUnlisted("NVML could not be initialised".into()))?;
        let dev = nvml.device_by_uuid(self.uuid.as_str()).map_err(|e| {
            ProcessesUnlisted(format!("NVML cannot find the GPU {}: {e}", self.uuid))
        })?;
        // The list can grow between NVML's count and its fetch: one more try.
        let list = dev
            .running_compute_processes()
            .or_else(|_| dev.running_compute_processes())
            .map_err(|e| {
                ProcessesUnlisted(format!("NVML cannot list the GPU's compute processes: {e}"))
            })?;
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
