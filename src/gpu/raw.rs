//! Every `unsafe` call of the GPU side lives here, each with the reason it is sound.

use std::ffi::{CStr, CString};
use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DeviceRepr, DriverError, LaunchConfig,
    PushKernelArg,
};
use cudarc::nvrtc;

/// Whether libcuda can be loaded (checked before anything calls into it, because cudarc
/// panics when a library is missing).
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library by name; no function is called.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Whether libnvrtc can be loaded.
pub fn nvrtc_present() -> bool {
    // SAFETY: as above, a dlopen attempt only.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// NVRTC's version, e.g. (13, 0). Callers check [`nvrtc_present`] first.
pub fn nvrtc_version() -> Option<(i32, i32)> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both pointers are to live locals; the library is loaded (checked by callers).
    let status = unsafe { nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    (status == nvrtc::sys::nvrtcResult::NVRTC_SUCCESS).then_some((major, minor))
}

/// The CUDA version the driver supports, as 13000 for 13.0.
pub fn driver_cuda_version() -> Result<i32, DriverError> {
    let mut v = 0;
    // SAFETY: writes one int to a live local; the library is loaded (checked by callers).
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) }.result()?;
    Ok(v)
}

/// Result of compiling one source with NVRTC.
pub enum Compiled {
    Cubin(Vec<u8>),
    Failed(String),
}

/// Compiles CUDA C++ `source` to a CUBIN for the architecture named in `options`.
pub fn nvrtc_compile(source: &str, name: &str, options: &[String]) -> Result<Compiled, String> {
    let src = CString::new(source).map_err(|_| format!("{name} contains a NUL byte"))?;
    let cname = CString::new(name).map_err(|_| format!("{name:?} contains a NUL byte"))?;
    let prog = nvrtc::result::create_program(&src, Some(&cname))
        .map_err(|e| format!("nvrtcCreateProgram: {e:?}"))?;
    // SAFETY: `prog` was just created and is destroyed exactly once below; `src` and `cname`
    // outlive it; the option strings are copied by NVRTC during the call.
    let compiled = unsafe { nvrtc::result::compile_program(prog, options) };
    let outcome = match compiled {
        Err(_) => {
            // SAFETY: `prog` is live; the log is a NUL-terminated buffer NVRTC sized.
            let log = unsafe { nvrtc::result::get_program_log(prog) }
                .map(|raw| {
                    // SAFETY: get_program_log returns a NUL-terminated C string.
                    unsafe { CStr::from_ptr(raw.as_ptr()) }
                        .to_string_lossy()
                        .into_owned()
                })
                .unwrap_or_else(|e| format!("(no log: {e:?})"));
            Ok(Compiled::Failed(log))
        }
        Ok(()) => {
            let mut size = 0usize;
            // SAFETY: `prog` compiled successfully; `size` is a live local.
            let status = unsafe { nvrtc::sys::nvrtcGetCUBINSize(prog, &mut size) };
            if status != nvrtc::sys::nvrtcResult::NVRTC_SUCCESS || size == 0 {
                Err(format!("nvrtcGetCUBINSize failed ({status:?}) for {name}"))
            } else {
                let mut cubin = vec![0u8; size];
                // SAFETY: `cubin` holds exactly the `size` bytes NVRTC asked for.
                let status = unsafe { nvrtc::sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast()) };
                if status == nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
                    Ok(Compiled::Cubin(cubin))
                } else {
                    Err(format!("nvrtcGetCUBIN failed ({status:?}) for {name}"))
                }
            }
        }
    };
    // SAFETY: `prog` is live and not used after this.
    let _ = unsafe { nvrtc::result::destroy_program(prog) };
    outcome
}

/// Stops cudarc from recording an event per buffer per launch: ci-gate uses one stream, and
/// events recorded inside a CUDA-graph capture would become part of the graph.
pub fn disable_event_tracking(ctx: &Arc<CudaContext>) {
    // SAFETY: called right after the context is created, before any buffer or stream of it
    // exists, and ci-gate orders all work on a single stream.
    unsafe { ctx.disable_event_tracking() }
}

/// Allocates `len` elements without initialising them. Every caller fills the whole buffer
/// with a kernel before anything reads it.
pub fn alloc<T: DeviceRepr>(
    stream: &Arc<CudaStream>,
    len: usize,
) -> Result<CudaSlice<T>, DriverError> {
    // SAFETY: the memory is written by a fill kernel before any read (see callers).
    unsafe { stream.alloc::<T>(len) }
}

/// The arguments of every attention kernel (fast and reference), in the ABI's order.
pub struct AttentionArgs<'a> {
    pub q: &'a CudaSlice<u16>,
    pub k: &'a CudaSlice<u16>,
    pub v: &'a CudaSlice<u16>,
    pub out: &'a mut CudaSlice<f32>,
    pub seq_len: i32,
    pub head_dim: i32,
    pub scale: f32,
    pub causal: i32,
}

/// Launches an attention kernel on `stream`.
pub fn launch_attention(
    stream: &CudaStream,
    func: &CudaFunction,
    cfg: LaunchConfig,
    a: AttentionArgs<'_>,
) -> Result<(), DriverError> {
    let elements = a.q.len();
    debug_assert!(a.k.len() == elements && a.v.len() == elements && a.out.len() == elements);
    let mut b = stream.launch_builder(func);
    b.arg(a.q)
        .arg(a.k)
        .arg(a.v)
        .arg(a.out)
        .arg(&a.seq_len)
        .arg(&a.head_dim)
        .arg(&a.scale)
        .arg(&a.causal);
    // SAFETY: the signature matches kernels/README.md (three u16 inputs, one f32 output, then
    // int, int, float, int). All four buffers hold grid.y · seq_len · head_dim elements
    // (checked by the caller that built `cfg` from the same shape), and the kernels only
    // touch rows < seq_len of the (batch, head) slice selected by blockIdx.y.
    unsafe { b.launch(cfg) }.map(|_| ())
}

/// Fills `dst` with standard-normal values of a 16-bit dtype (`fill_normal_f16/bf16`).
pub fn launch_fill_normal(
    stream: &CudaStream,
    func: &CudaFunction,
    dst: &mut CudaSlice<u16>,
    seed: u64,
) -> Result<(), DriverError> {
    let n = dst.len() as u64;
    let mut b = stream.launch_builder(func);
    b.arg(dst).arg(&n).arg(&seed);
    // SAFETY: fill_normal_*(unsigned short*, unsigned long long n, unsigned long long seed)
    // writes exactly indices < n with a grid-stride loop; `n` is the buffer's length.
    unsafe { b.launch(fill_config(n)) }.map(|_| ())
}

/// Fills `dst` with the 32-bit pattern `value` (`fill_u32`), e.g. to poison an output.
pub fn launch_fill_u32(
    stream: &CudaStream,
    func: &CudaFunction,
    dst: &mut CudaSlice<f32>,
    value: u32,
) -> Result<(), DriverError> {
    let n = dst.len() as u64;
    let mut b = stream.launch_builder(func);
    b.arg(dst).arg(&n).arg(&value);
    // SAFETY: fill_u32(unsigned int*, unsigned long long n, unsigned int) writes indices < n;
    // f32 and u32 have the same size, and any bit pattern is a valid f32.
    unsafe { b.launch(fill_config(n)) }.map(|_| ())
}

/// One thread busy-waits `cycles` SM clock cycles (`spin_cycles`): a calibrated slowdown.
pub fn launch_spin(
    stream: &CudaStream,
    func: &CudaFunction,
    cycles: i64,
) -> Result<(), DriverError> {
    let mut b = stream.launch_builder(func);
    b.arg(&cycles);
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: spin_cycles(long long) touches no memory.
    unsafe { b.launch(cfg) }.map(|_| ())
}

fn fill_config(n: u64) -> LaunchConfig {
    let blocks = n.div_ceil(256).clamp(1, 65_535) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Reads a kernel's `NAME_launch` constant: {rows_per_block, threads_per_block, dynamic_smem}.
pub fn read_launch_constant(
    module: &Arc<cudarc::driver::CudaModule>,
    stream: &Arc<CudaStream>,
    symbol: &str,
) -> Result<[i32; 3], DriverError> {
    let global = module.get_global(symbol, stream)?;
    if global.len() < 12 {
        return Err(DriverError(
            cudarc::driver::sys::CUresult::CUDA_ERROR_INVALID_VALUE,
        ));
    }
    // SAFETY: the symbol holds at least 12 bytes (checked above), read as three i32.
    let view = unsafe { global.transmute::<i32>(3) }.ok_or(DriverError(
        cudarc::driver::sys::CUresult::CUDA_ERROR_INVALID_VALUE,
    ))?;
    let host = stream.clone_dtoh(&view)?;
    Ok([host[0], host[1], host[2]])
}

// ---- The sandboxed NVRTC process (`gpu::sandbox`): process-level calls of the child. ----

/// A resource limit the NVRTC child sets on itself before it reads any source.
#[derive(Clone, Copy, Debug)]
pub enum Limit {
    /// Bytes of address space.
    AddressSpace,
    /// Seconds of CPU time (SIGXCPU at the value, SIGKILL one second later).
    CpuSeconds,
    /// Bytes of a core file.
    Core,
    /// Open file descriptors.
    Files,
}

/// Sets `limit` to `value` for this process and its threads (soft and hard; the hard limit of
/// CPU time one second higher, so that the soft signal comes first).
pub fn set_limit(limit: Limit, value: u64) -> std::io::Result<()> {
    let hard = match limit {
        Limit::CpuSeconds => value.saturating_add(1),
        _ => value,
    };
    let rl = libc::rlimit {
        rlim_cur: value as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: setrlimit reads one rlimit struct from a live local; a resource limit lowers
    // what this process may do and affects no memory of it.
    let rc = unsafe {
        match limit {
            Limit::AddressSpace => libc::setrlimit(libc::RLIMIT_AS, &rl),
            Limit::CpuSeconds => libc::setrlimit(libc::RLIMIT_CPU, &rl),
            Limit::Core => libc::setrlimit(libc::RLIMIT_CORE, &rl),
            Limit::Files => libc::setrlimit(libc::RLIMIT_NOFILE, &rl),
        }
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Closes every file descriptor above stderr that this process inherited: the child must hold
/// nothing of its parent's (a descriptor opened without close-on-exec by a library there).
/// Best effort: a kernel without close_range(2) (before 5.9) leaves them.
pub fn close_inherited_descriptors() {
    // SAFETY: close_range closes descriptors 3.. of this process; it runs first thing in the
    // child, before anything in this process opened a descriptor it still uses (std opens none
    // at start-up).
    let _ = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) };
}

/// Takes this process's stdout for the child's answer and points descriptor 1 at stderr, so
/// that nothing else written to stdout (by NVRTC or anything it loads) can corrupt the answer.
pub fn take_stdout() -> std::io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    // SAFETY: duplicates descriptor 1 to a new descriptor (>= 3, close-on-exec); touches no
    // memory.
    let fd = unsafe { libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created by fcntl and nothing else owns it.
    let answer = unsafe { std::fs::File::from_raw_fd(fd) };
    // SAFETY: makes descriptor 1 a copy of descriptor 2 (both open); touches no memory.
    if unsafe { libc::dup2(2, 1) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(answer)
}

/// Loads the shared library at `path` and keeps it loaded for the life of the process, so
/// that what it needs (its own dependencies) is mapped now, before the sandbox closes the
/// file system.
pub fn preload_library(path: &std::path::Path) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let cpath = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| format!("{} contains a NUL byte", path.display()))?;
    // SAFETY: dlopen takes a NUL-terminated path; the library is NVRTC's own builtins
    // library from the directory NVRTC itself was loaded from, whose initialisers are as
    // trusted as NVRTC's. The handle is never closed, so nothing it maps is ever unmapped.
    let handle = unsafe { libc::dlopen(cpath.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if !handle.is_null() {
        return Ok(());
    }
    // SAFETY: dlerror returns NULL or a NUL-terminated string owned by libc, copied at once.
    let why = unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            "unknown error".to_owned()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    };
    Err(why)
}

/// Loads NVRTC for good (as compiling does), so that its directory shows in /proc/self/maps.
pub fn load_nvrtc() -> bool {
    nvrtc_present() && nvrtc_version().is_some()
}
