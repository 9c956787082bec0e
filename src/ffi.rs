//! Every `unsafe` call of the crate lives here, each with the reason it is sound: the CUDA
//! driver's and NVRTC's C interfaces through cudarc (for `gpu`) and the sandboxed compiler's
//! process calls (for `kernel::sandbox`). It imports nothing of the crate, so both can use it
//! from below.

use std::ffi::{CStr, CString};
use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, CudaView, CudaViewMut, DeviceRepr,
    DriverError, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use cudarc::nvrtc;

/// Whether libcuda can be loaded (checked before anything calls into it, because cudarc
/// panics when a library is missing).
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library by name; no function is called.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

// The C library's `fflush`; `std` has no binding for it.
unsafe extern "C" {
    fn fflush(stream: *mut std::ffi::c_void) -> std::ffi::c_int;
}

/// Flushes every C stdio output stream (`fflush(NULL)`).
pub(crate) fn flush_c_stdio() {
    // SAFETY: fflush with a null pointer flushes all open output streams; no memory of ours
    // is passed or kept.
    unsafe {
        fflush(std::ptr::null_mut());
    }
}

/// Whether libnvrtc can be loaded.
pub fn nvrtc_present() -> bool {
    // SAFETY: as above, a dlopen attempt only.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// NVRTC's version, e.g. (13, 0). Callers check [`nvrtc_present`] first.
pub(crate) fn nvrtc_version() -> Option<(i32, i32)> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both pointers are to live locals; the library is loaded (checked by callers).
    let status = unsafe { nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    (status == nvrtc::sys::nvrtcResult::NVRTC_SUCCESS).then_some((major, minor))
}

/// The CUDA version the driver supports, as 13000 for 13.0.
pub(crate) fn driver_cuda_version() -> Result<i32, DriverError> {
    let mut v = 0;
    // SAFETY: writes one int to a live local; the library is loaded (checked by callers).
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) }.result()?;
    Ok(v)
}

/// Result of compiling one source with NVRTC.
pub(crate) enum Compiled {
    /// The CUBIN and the program log (ptxas's report with `--ptxas-options=-v`).
    Cubin {
        cubin: Vec<u8>,
        log: String,
    },
    Failed(String),
}

/// The program log of `prog`, or why there is none.
fn program_log(prog: nvrtc::sys::nvrtcProgram) -> String {
    // SAFETY: `prog` is a live program (the caller's); the log is a NUL-terminated buffer
    // NVRTC sized.
    unsafe { nvrtc::result::get_program_log(prog) }
        .map(|raw| {
            // SAFETY: get_program_log returns a NUL-terminated C string.
            unsafe { CStr::from_ptr(raw.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_else(|e| format!("(no log: {e:?})"))
}

/// Compiles CUDA C++ `source` to a CUBIN for the architecture named in `options`.
pub(crate) fn nvrtc_compile(
    source: &str,
    name: &str,
    options: &[String],
) -> Result<Compiled, String> {
    let src = CString::new(source).map_err(|_| format!("{name} contains a NUL byte"))?;
    let cname = CString::new(name).map_err(|_| format!("{name:?} contains a NUL byte"))?;
    let prog = nvrtc::result::create_program(&src, Some(&cname))
        .map_err(|e| format!("nvrtcCreateProgram: {e:?}"))?;
    // SAFETY: `prog` was just created and is destroyed exactly once below; `src` and `cname`
    // outlive it; the option strings are copied by NVRTC during the call.
    let compiled = unsafe { nvrtc::result::compile_program(prog, options) };
    let outcome = match compiled {
        Err(_) => Ok(Compiled::Failed(program_log(prog))),
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
                    Ok(Compiled::Cubin {
                        cubin,
                        log: program_log(prog),
                    })
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
pub(crate) fn disable_event_tracking(ctx: &Arc<CudaContext>) {
    // SAFETY: called right after the context is created, before any buffer or stream of it
    // exists, and ci-gate orders all work on a single stream.
    unsafe { ctx.disable_event_tracking() }
}

/// A captured CUDA graph with the parameters each of its kernel nodes was captured with.
///
/// A launch's parameter memory on the device is writable through a generic address (the
/// padding of a `__grid_constant__` tensor map, say) and persists from one replay of an
/// executable graph to the next (issue 36: a kernel kept forged state there). So before
/// every replay each kernel node's parameters are set again ([`ReplayGraph::reset_params`])
/// from the graph's own copy, which lives in host memory the driver keeps with the graph
/// and no kernel can reach. Cost: one driver call per kernel node per replay (host time,
/// outside the timed region).
pub(crate) struct ReplayGraph {
    /// (node, its captured parameters): the parameters' `kernelParams` point into memory the
    /// driver keeps with `graph`, which this struct owns, so they live as long as it does.
    nodes: Vec<(
        cudarc::driver::sys::CUgraphNode,
        cudarc::driver::sys::CUDA_KERNEL_NODE_PARAMS,
    )>,
    graph: cudarc::driver::CudaGraph,
    stream: Arc<CudaStream>,
}

impl ReplayGraph {
    /// Reads the kernel nodes of `graph` (captured and instantiated on `stream`).
    pub(crate) fn new(
        graph: cudarc::driver::CudaGraph,
        stream: &Arc<CudaStream>,
    ) -> Result<ReplayGraph, DriverError> {
        use cudarc::driver::sys;
        stream.context().bind_to_thread()?;
        let g = graph.cu_graph();
        let mut count = 0usize;
        // SAFETY: `g` is the live graph `graph` owns; a null array asks for the count only,
        // written to a live local.
        unsafe { sys::cuGraphGetNodes(g, std::ptr::null_mut(), &mut count) }.result()?;
        let mut handles: Vec<sys::CUgraphNode> = vec![std::ptr::null_mut(); count];
        // SAFETY: `handles` holds `count` entries, the most the call writes (it updates
        // `count` to what it wrote).
        unsafe { sys::cuGraphGetNodes(g, handles.as_mut_ptr(), &mut count) }.result()?;
        handles.truncate(count);
        let mut nodes = Vec::with_capacity(handles.len());
        for node in handles {
            let mut kind = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
            // SAFETY: `node` is a node of the live graph; one enum written to a live local.
            unsafe { sys::cuGraphNodeGetType(node, &mut kind) }.result()?;
            if kind != sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_KERNEL {
                continue;
            }
            let mut params = std::mem::MaybeUninit::<sys::CUDA_KERNEL_NODE_PARAMS>::zeroed();
            // SAFETY: a kernel node of the live graph; the struct is written whole by a
            // successful call (zeroed first, so every field is initialised either way).
            unsafe { sys::cuGraphKernelNodeGetParams_v2(node, params.as_mut_ptr()) }.result()?;
            // SAFETY: zero-initialised, then written by the driver: plain data and pointers.
            nodes.push((node, unsafe { params.assume_init() }));
        }
        Ok(ReplayGraph {
            nodes,
            graph,
            stream: stream.clone(),
        })
    }

    /// Kernel nodes (for messages and tests).
    pub(crate) fn kernel_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Sets every kernel node's parameters of the executable graph again from the captured
    /// ones. Launches of the graph already queued keep the parameters they were queued with
    /// (the driver's rule for updates of an executable graph); the next launch uses these.
    pub(crate) fn reset_params(&self) -> Result<(), DriverError> {
        self.stream.context().bind_to_thread()?;
        let exec = self.graph.cu_graph_exec();
        for (node, params) in &self.nodes {
            // SAFETY: `exec` was instantiated from the graph `node` belongs to (both owned by
            // self.graph); `params` are that node's own captured parameters, whose pointers
            // (function, kernelParams) stay valid while self.graph lives.
            unsafe { cudarc::driver::sys::cuGraphExecKernelNodeSetParams_v2(exec, *node, params) }
                .result()?;
        }
        Ok(())
    }

    /// Uploads the executable graph (its parameters included) on the stream, so that the next
    /// launch does not do it inside a timed region.
    pub(crate) fn upload(&self) -> Result<(), DriverError> {
        self.graph.upload()
    }

    /// Launches the graph on its stream.
    pub(crate) fn launch(&self) -> Result<(), DriverError> {
        self.graph.launch()
    }
}

/// Page-locked host memory the checks' words are copied into, in stream order, right after
/// the checks that wrote them: a kernel launched later on the stream cannot change a word
/// that has left the device (issue 36: every accumulator the checker reads is out of the
/// kernel's reach by the time the next replay runs). Read only after the stream has been
/// synchronized.
pub(crate) struct HostWords {
    words: cudarc::driver::PinnedHostSlice<u64>,
}

impl HostWords {
    /// `len` words of page-locked memory (cached: the host reads them), zeroed.
    pub(crate) fn new(ctx: &Arc<CudaContext>, len: usize) -> Result<HostWords, DriverError> {
        // SAFETY: flags 0 (cacheable, this context only); the memory is uninitialised until
        // it is zeroed on the next line, and never read before.
        let mut words = unsafe { ctx.alloc_pinned_with_flags::<u64>(len.max(1), 0) }?;
        words.as_mut_slice()?.fill(0);
        Ok(HostWords { words })
    }

    pub(crate) fn len(&self) -> usize {
        self.words.len()
    }

    /// Queues the copy of `src` into words `at ..+ src.len()`.
    pub(crate) fn copy_from(
        &mut self,
        stream: &Arc<CudaStream>,
        src: &CudaView<'_, u64>,
        at: usize,
    ) -> Result<(), DriverError> {
        use cudarc::driver::DevicePtr;
        let end = at.checked_add(src.len()).ok_or_else(invalid)?;
        if end > self.words.len() {
            return Err(invalid());
        }
        stream.context().bind_to_thread()?;
        // Waits for this slice's own event, which only cudarc's copies record (never these),
        // so it does not block.
        let host = self.words.as_mut_slice()?;
        let (ptr, _record) = src.device_ptr(stream);
        // SAFETY: `host[at..end]` is page-locked memory this struct owns, `src.len()` words
        // long as the copy (checked above), and it outlives the copy (the caller synchronizes
        // the stream before reading or dropping it); `ptr` is the start of a live device
        // view of src.len() u64.
        unsafe {
            cudarc::driver::result::memcpy_dtoh_async(&mut host[at..end], ptr, stream.cu_stream())
        }
    }

    /// The words, after the stream was synchronized.
    pub(crate) fn words(&self) -> Result<&[u64], DriverError> {
        self.words.as_slice()
    }
}

/// Ends the process at once with `code`, running no destructor and no exit handler: what
/// the watchdog does when the GPU is hung, because anything that touches the hung context
/// (freeing a buffer, destroying the context at exit) could block forever.
pub(crate) fn exit_now(code: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: _exit takes no pointers and never returns; skipping destructors and atexit
    // handlers is the point (the driver's teardown could wait on the hung kernel).
    unsafe { libc::_exit(code) }
}

/// Allocates `len` zeroed elements.
pub(crate) fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    len: usize,
) -> Result<CudaSlice<T>, DriverError> {
    stream.alloc_zeros::<T>(len)
}

/// Allocates a tensor of `shape`-sized 16-bit elements of `input.role` and fills it from
/// the input mixture with `seed` (`fill_input_*`).
pub(crate) fn alloc_input(
    stream: &Arc<CudaStream>,
    fill: &CudaFunction,
    len: usize,
    seed: u64,
    input: InputLayout,
) -> Result<CudaSlice<u16>, DriverError> {
    // SAFETY: fill_input writes every one of the `len` elements before anything reads them
    // (same stream, queued right after the allocation).
    let mut buf = unsafe { stream.alloc::<u16>(len) }?;
    launch_fill_input(stream, fill, &mut buf.slice_mut(..), seed, input)?;
    Ok(buf)
}

/// What `fill_input_*` needs to know of a tensor beyond its seed: its role (0 q, 1 k, 2 v:
/// each draws its own classes) and the [batch·heads, seq_len, head_dim] geometry that maps
/// an element to its (batch, head) slice, row and column.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InputLayout {
    /// kernels/util.cu's numbering (`gpu::mixture::Role` as an int).
    pub role: i32,
    pub seq_len: u32,
    pub head_dim: u32,
}

/// Allocates `len` f32 elements, all holding the bit pattern `value`.
pub(crate) fn alloc_filled(
    stream: &Arc<CudaStream>,
    fill_u32: &CudaFunction,
    len: usize,
    value: u32,
) -> Result<CudaSlice<f32>, DriverError> {
    // SAFETY: fill_u32 writes every one of the `len` elements before anything reads them.
    let mut buf = unsafe { stream.alloc::<f32>(len) }?;
    launch_fill_u32(stream, fill_u32, &mut buf, value)?;
    Ok(buf)
}

/// The arguments of every attention kernel (fast and reference), in the ABI's order.
pub(crate) struct AttentionArgs<'a> {
    pub q: CudaView<'a, u16>,
    pub k: CudaView<'a, u16>,
    pub v: CudaView<'a, u16>,
    pub out: CudaViewMut<'a, f32>,
    pub seq_len: i32,
    pub head_dim: i32,
    pub scale: f32,
    pub causal: i32,
    /// The kernel declares `NAME_tma` (kernels/README.md): three TMA tensor maps, of q, k
    /// and v, follow the eight arguments, by value.
    pub tma: bool,
}

/// A TMA tensor map (`CUtensorMap`, 128 bytes) passed by value as a kernel argument: the
/// kernel declares it `const __grid_constant__`, so it lives in the launch's parameter space.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub(crate) struct TensorMapArg(cudarc::driver::sys::CUtensorMap);

// SAFETY: a plain-old-data struct of 16 u64 (CUtensorMap) that the driver copies into the
// kernel's parameter space, exactly what the kernel's parameter of the same size expects.
unsafe impl DeviceRepr for TensorMapArg {}

/// The TMA box of the ABI's tensor maps, {head_dim elements, rows}: 64 × 64 16-bit values =
/// one 8 KiB atom of the 128-byte swizzle (kernels/README.md, "TMA").
pub(crate) const TMA_BOX: [u32; 2] = [64, 64];

/// Encodes the ABI's tensor map of one [batch·heads, seq_len, head_dim] 16-bit tensor: 3-D
/// {head_dim, seq_len, batch·heads} (innermost first), box [`TMA_BOX`] × 1, 128-byte swizzle,
/// rows past seq_len (of each slice) and columns past head_dim read as zero.
fn encode_tensor_map(
    stream: &CudaStream,
    buf: &CudaView<'_, u16>,
    seq_len: usize,
    head_dim: usize,
    slices: usize,
) -> Result<TensorMapArg, DriverError> {
    use cudarc::driver::DevicePtr;
    use cudarc::driver::sys::{
        CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave,
        CUtensorMapL2promotion, CUtensorMapSwizzle,
    };
    let dims = [head_dim as u64, seq_len as u64, slices as u64];
    // Byte strides of dimensions 1 and 2 (dimension 0 is contiguous).
    let strides = [
        (head_dim * 2) as u64,
        (seq_len as u64)
            .checked_mul((head_dim * 2) as u64)
            .ok_or_else(invalid)?,
    ];
    let boxes = [TMA_BOX[0], TMA_BOX[1], 1u32];
    let elem_strides = [1u32; 3];
    let (ptr, _record) = buf.device_ptr(stream);
    let mut map = std::mem::MaybeUninit::<cudarc::driver::sys::CUtensorMap>::zeroed();
    // SAFETY: `map` is writable and 128 bytes; the arrays hold `rank` = 3 entries each;
    // `ptr` is the start of a live buffer of slices · seq_len · head_dim u16 (the caller
    // checked the length), 256-byte aligned (a whole allocation, or a slot of a pool whose
    // slots are multiples of 128 elements). cuTensorMapEncodeTiled
    // only writes `map` (host memory) and validates the rest, returning an error otherwise.
    unsafe {
        cudarc::driver::sys::cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT16,
            3,
            ptr as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            elem_strides.as_ptr(),
            CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
        .result()?;
    }
    // SAFETY: initialised: zeroed above, then written by a successful encode.
    Ok(TensorMapArg(unsafe { map.assume_init() }))
}

fn invalid() -> DriverError {
    DriverError(cudarc::driver::sys::CUresult::CUDA_ERROR_INVALID_VALUE)
}

/// Launches an attention kernel on `stream`. The buffers' lengths are checked against the
/// launch shape first (in every build): a mismatch is CUDA_ERROR_INVALID_VALUE, never a
/// launch that could read or write past a buffer.
pub(crate) fn launch_attention(
    stream: &CudaStream,
    func: &CudaFunction,
    cfg: LaunchConfig,
    mut a: AttentionArgs<'_>,
) -> Result<(), DriverError> {
    let (Ok(seq_len), Ok(head_dim)) = (usize::try_from(a.seq_len), usize::try_from(a.head_dim))
    else {
        return Err(invalid());
    };
    let elements = (cfg.grid_dim.1 as usize)
        .checked_mul(seq_len)
        .and_then(|n| n.checked_mul(head_dim))
        .ok_or_else(invalid)?;
    if seq_len == 0
        || cfg.grid_dim.2 != 1
        || a.q.len() != elements
        || a.k.len() != elements
        || a.v.len() != elements
        || a.out.len() != elements
    {
        return Err(invalid());
    }
    let maps = if a.tma {
        let slices = cfg.grid_dim.1 as usize;
        Some([
            encode_tensor_map(stream, &a.q, seq_len, head_dim, slices)?,
            encode_tensor_map(stream, &a.k, seq_len, head_dim, slices)?,
            encode_tensor_map(stream, &a.v, seq_len, head_dim, slices)?,
        ])
    } else {
        None
    };
    let mut b = stream.launch_builder(func);
    b.arg(&a.q)
        .arg(&a.k)
        .arg(&a.v)
        .arg(&mut a.out)
        .arg(&a.seq_len)
        .arg(&a.head_dim)
        .arg(&a.scale)
        .arg(&a.causal);
    if let Some(maps) = &maps {
        b.arg(&maps[0]).arg(&maps[1]).arg(&maps[2]);
    }
    // SAFETY: the signature matches kernels/README.md (three u16 inputs, one f32 output, then
    // int, int, float, int; then three 128-byte tensor maps of q, k, v where the kernel
    // declares NAME_tma). All four buffers hold grid.y · seq_len · head_dim elements
    // (checked above), and the kernels only touch rows < seq_len of the (batch, head) slice
    // selected by blockIdx.y. (An adversarial kernel may write anywhere it can reach: the
    // integrity checks in gpu::integrity catch that; memory safety of this process is not at
    // stake, the device memory is not the host's.)
    unsafe { b.launch(cfg) }.map(|_| ())
}

/// Fills `dst` with values of a 16-bit dtype drawn from the input mixture
/// (`fill_input_f16/bf16`).
pub(crate) fn launch_fill_input(
    stream: &CudaStream,
    func: &CudaFunction,
    dst: &mut CudaViewMut<'_, u16>,
    seed: u64,
    input: InputLayout,
) -> Result<(), DriverError> {
    let n = dst.len() as u64;
    let (Ok(seq_len), Ok(head_dim)) = (i32::try_from(input.seq_len), i32::try_from(input.head_dim))
    else {
        return Err(invalid());
    };
    if seq_len < 1 || head_dim < 1 {
        return Err(invalid());
    }
    let role = input.role;
    let mut b = stream.launch_builder(func);
    b.arg(dst)
        .arg(&n)
        .arg(&seed)
        .arg(&role)
        .arg(&seq_len)
        .arg(&head_dim);
    // SAFETY: fill_input_*(unsigned short*, unsigned long long n, unsigned long long seed,
    // int role, int seq_len, int head_dim) writes exactly indices < n with a grid-stride
    // loop (`n` is the buffer's length); seq_len and head_dim only divide indices (both >= 1,
    // checked).
    unsafe { b.launch(fill_config(n)) }.map(|_| ())
}

/// Fills `dst` with the 32-bit pattern `value` (`fill_u32`), e.g. to poison an output.
pub(crate) fn launch_fill_u32(
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
pub(crate) fn launch_spin(
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

/// Adds a keyed hash of `n` elements at `buf` to `out[0]` (`hash_u16`, or `hash_u32` for
/// 32-bit elements): see kernels/util.cu.
pub(crate) fn launch_hash<T: DeviceRepr>(
    stream: &CudaStream,
    func: &CudaFunction,
    buf: &CudaView<'_, T>,
    key: u64,
    out: &mut CudaViewMut<'_, u64>,
) -> Result<(), DriverError> {
    let n = buf.len() as u64;
    if out.is_empty() || !matches!(std::mem::size_of::<T>(), 2 | 4) {
        return Err(invalid());
    }
    let mut b = stream.launch_builder(func);
    b.arg(buf).arg(&n).arg(&key).arg(out);
    // SAFETY: hash_u16/hash_u32(const T* p, unsigned long long n, unsigned long long key,
    // unsigned long long* out) read indices < n of `buf` (its length) and add to out[0]
    // (`out` is not empty); the caller picks the kernel of T's size (checked: 2 or 4 bytes).
    unsafe { b.launch(reduce_config(n, 4096)) }.map(|_| ())
}

/// Where the output slots of one sample lie in their region, and what to compare them with.
pub(crate) struct SlotTable<'a> {
    pub region: &'a CudaSlice<f32>,
    /// Element offset of each slot in `region` (device copy).
    pub slot_offsets: &'a CudaSlice<u64>,
    /// Element offset of each slot's reference rows in `refs` (device copy).
    pub ref_offsets: &'a CudaSlice<u64>,
    /// Reference rows, compact: [batch·heads, rows, head_dim] per slot (each launch has its
    /// own reference).
    pub refs: &'a CudaSlice<f32>,
    /// The query rows each slot's reference computed (device copy): a list of `nrows` per
    /// slot, back to back, made on the device, where the check kernel bounds them.
    pub rows: &'a CudaSlice<i32>,
    pub nrows: usize,
    pub seq_len: usize,
    pub head_dim: usize,
    /// Elements of one output: batch·heads·seq_len·head_dim.
    pub elements: usize,
    /// The host copies, checked against the buffers' lengths before any launch.
    pub host_slot_offsets: &'a [u64],
    pub host_ref_offsets: &'a [u64],
    /// s_V of every (input set, batch·head) slice: `sets` · batch·heads scales (device copy,
    /// uploaded after the launches it checks); launch s read set s % sets.
    pub v_scales: &'a CudaSlice<f32>,
    pub sets: usize,
}

/// Checks every slot of `t` against its reference (`check_outputs`), accumulating into
/// `results` (five u64 words per slot, zeroed by the caller).
pub(crate) fn launch_check_outputs(
    stream: &CudaStream,
    func: &CudaFunction,
    t: &SlotTable<'_>,
    poison: u32,
    results: &mut CudaViewMut<'_, u64>,
) -> Result<(), DriverError> {
    let slots = t.host_slot_offsets.len();
    let n = t.elements as u64;
    let nrows = t.nrows;
    let row_len = t.seq_len.checked_mul(t.head_dim).ok_or_else(invalid)?;
    if row_len == 0 || !t.elements.is_multiple_of(row_len) {
        return Err(invalid());
    }
    // Reference elements per slot: batch·heads · rows · head_dim.
    let m = (t.elements / row_len * nrows * t.head_dim) as u64;
    let fits = |offsets: &[u64], per: u64, len: usize| {
        offsets
            .iter()
            .all(|&o| o.checked_add(per).is_some_and(|end| end <= len as u64))
    };
    let (Ok(nrows_i32), Ok(seq_len), Ok(head_dim)) = (
        i32::try_from(nrows),
        i32::try_from(t.seq_len),
        i32::try_from(t.head_dim),
    ) else {
        return Err(invalid());
    };
    let rows_stride = nrows_i32;
    let rows_len = slots.checked_mul(nrows).ok_or_else(invalid)?;
    let Ok(sets) = i32::try_from(t.sets) else {
        return Err(invalid());
    };
    if sets < 1 || Some(t.v_scales.len()) != (t.elements / row_len).checked_mul(t.sets) {
        return Err(invalid());
    }
    if slots == 0
        || slots > 65_535
        || nrows == 0
        || t.rows.len() != rows_len
        || t.host_ref_offsets.len() != slots
        || t.slot_offsets.len() != slots
        || t.ref_offsets.len() != slots
        || results.len() < slots * 5
        || !fits(t.host_slot_offsets, n, t.region.len())
        || !fits(t.host_ref_offsets, m, t.refs.len())
    {
        return Err(invalid());
    }
    // About 4096 blocks in all, each folding into its slot's accumulators once.
    let mut cfg = reduce_config(n, (4096 / slots as u32).max(1));
    cfg.grid_dim.1 = slots as u32;
    let mut b = stream.launch_builder(func);
    b.arg(t.region)
        .arg(t.slot_offsets)
        .arg(t.ref_offsets)
        .arg(t.refs)
        .arg(t.rows)
        .arg(&nrows_i32)
        .arg(&rows_stride)
        .arg(&seq_len)
        .arg(&head_dim)
        .arg(&n)
        .arg(&poison)
        .arg(t.v_scales)
        .arg(&sets)
        .arg(results);
    // SAFETY: check_outputs(const float*, const u64* slot_offsets, const u64* ref_offsets,
    // const float* refs, const int* rows, int nrows, int rows_stride, int seq_len,
    // int head_dim, u64 n, unsigned poison, const float* v_scales, int sets,
    // CgCheck* results): block row y reads v_scales[(y % sets)·heads ..+ heads) (it holds
    // sets·heads, heads = n / (seq_len·head_dim): checked) and
    // rows[y·rows_stride ..+ nrows) (rows_stride = nrows and rows holds slots·nrows
    // entries: checked), region[slot_offsets[y] ..+ n), within it only rows the
    // kernel itself bounds to 0..seq_len of each of the n / (seq_len·head_dim) heads, and
    // refs[ref_offsets[y] ..+ m); all in bounds (checked above against the host copies,
    // which the caller uploaded as the device copies); it adds to the 5 words (40 bytes,
    // CgCheck's layout) of results[y]; grid.y = slots.
    unsafe { b.launch(cfg) }.map(|_| ())
}

/// Counts the words of the spans (`offsets[i] ..+ lens[i]` of `region`) that do not hold
/// `value` (`check_fill`), adding to `mismatches[0]`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch_check_fill(
    stream: &CudaStream,
    func: &CudaFunction,
    region: &CudaSlice<f32>,
    offsets: &CudaSlice<u64>,
    lens: &CudaSlice<u64>,
    host_spans: &[(u64, u64)],
    value: u32,
    mismatches: &mut CudaViewMut<'_, u64>,
) -> Result<(), DriverError> {
    let spans = host_spans.len();
    if spans == 0
        || spans > 65_535
        || offsets.len() != spans
        || lens.len() != spans
        || mismatches.is_empty()
        || !host_spans.iter().all(|&(o, l)| {
            o.checked_add(l)
                .is_some_and(|end| end <= region.len() as u64)
        })
    {
        return Err(invalid());
    }
    let longest = host_spans.iter().map(|s| s.1).max().unwrap_or(1);
    let mut cfg = fill_config(longest);
    cfg.grid_dim.0 = cfg.grid_dim.0.min(256);
    cfg.grid_dim.1 = spans as u32;
    let mut b = stream.launch_builder(func);
    b.arg(region)
        .arg(offsets)
        .arg(lens)
        .arg(&value)
        .arg(mismatches);
    // SAFETY: check_fill(const unsigned*, const u64* offsets, const u64* lens, unsigned,
    // u64* mismatches): block row y reads region[offsets[y] ..+ lens[y]) (in bounds, checked
    // above against the host copies the caller uploaded) and adds to mismatches[0].
    unsafe { b.launch(cfg) }.map(|_| ())
}

/// Fills the q of every timed launch of a sample (`fill_q_pool_*`): `launches` slices of
/// `n` elements of `pool`, slice i from the seed `cg_launch_seed(key, i)`, each drawn from
/// the input mixture (the layout's role is q).
pub(crate) fn launch_fill_q_pool(
    stream: &CudaStream,
    func: &CudaFunction,
    pool: &mut CudaSlice<u16>,
    n: usize,
    launches: usize,
    key: u64,
    layout: InputLayout,
) -> Result<(), DriverError> {
    if n == 0 || launches == 0 || launches > 65_535 || n.checked_mul(launches) != Some(pool.len()) {
        return Err(invalid());
    }
    let (Ok(seq_len), Ok(head_dim)) = (
        i32::try_from(layout.seq_len),
        i32::try_from(layout.head_dim),
    ) else {
        return Err(invalid());
    };
    if seq_len < 1 || head_dim < 1 {
        return Err(invalid());
    }
    let mut cfg = fill_config(n as u64);
    // About 8192 blocks in all: each launch's slice is filled by a row of the grid.
    cfg.grid_dim.0 = cfg.grid_dim.0.min((8192 / launches as u32).max(1));
    cfg.grid_dim.1 = launches as u32;
    let n = n as u64;
    let mut b = stream.launch_builder(func);
    b.arg(pool).arg(&n).arg(&key).arg(&seq_len).arg(&head_dim);
    // SAFETY: fill_q_pool_*(unsigned short* dst, u64 n, u64 key, int seq_len, int head_dim):
    // block row y writes dst[y·n ..+ n) with a grid-stride loop; grid.y = launches and the
    // pool holds exactly launches · n elements (checked above); seq_len and head_dim (>= 1)
    // only divide indices.
    unsafe { b.launch(cfg) }.map(|_| ())
}

/// The geometry of one sample's per-launch reference: `launches` launches of `heads` =
/// batch · heads slices of seq_len × head_dim, `nrows` rows of each compared.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LaunchGeometry {
    pub launches: usize,
    pub heads: usize,
    pub seq_len: usize,
    pub head_dim: usize,
    pub nrows: usize,
}

impl LaunchGeometry {
    /// Elements of the compact per-launch rows: launches · heads · nrows · head_dim.
    pub(crate) fn compact(&self) -> Option<usize> {
        self.launches
            .checked_mul(self.heads)?
            .checked_mul(self.nrows)?
            .checked_mul(self.head_dim)
    }

    fn valid(&self) -> Option<(i32, i32, i32, i32)> {
        if self.launches == 0
            || self.launches > 65_535
            || self.heads == 0
            || self.heads > 65_535
            || self.seq_len == 0
            || self.nrows == 0
            || self.nrows > 8
            || self.head_dim == 0
            || self.head_dim > 256
        {
            return None;
        }
        Some((
            i32::try_from(self.heads).ok()?,
            i32::try_from(self.seq_len).ok()?,
            i32::try_from(self.head_dim).ok()?,
            i32::try_from(self.nrows).ok()?,
        ))
    }
}

/// Writes the compared rows of every launch of a sample and their q values (`launch_rows_*`,
/// from the sample's q key and row key) into `rows` and `qrows`.
pub(crate) fn launch_launch_rows(
    stream: &CudaStream,
    func: &CudaFunction,
    g: LaunchGeometry,
    key: u64,
    row_key: u64,
    rows: &mut CudaSlice<i32>,
    qrows: &mut CudaSlice<f32>,
) -> Result<(), DriverError> {
    let (heads, seq_len, head_dim, nrows) = g.valid().ok_or_else(invalid)?;
    if g.launches.checked_mul(g.nrows) != Some(rows.len()) || g.compact() != Some(qrows.len()) {
        return Err(invalid());
    }
    let cfg = LaunchConfig {
        grid_dim: (g.nrows as u32, g.heads as u32, g.launches as u32),
        block_dim: (g.head_dim.next_multiple_of(32).min(256) as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = stream.launch_builder(func);
    b.arg(&key)
        .arg(&row_key)
        .arg(&heads)
        .arg(&seq_len)
        .arg(&head_dim)
        .arg(&nrows)
        .arg(rows)
        .arg(qrows);
    // SAFETY: launch_rows_*(u64 key, u64 row_key, int heads, int seq_len, int head_dim,
    // int nrows, int* rows, float* qrows): block (t, h, i) writes rows[i·nrows + t] and
    // qrows[((i·heads + h)·nrows + t)·head_dim ..+ head_dim); grid = (nrows, heads,
    // launches) and the buffers hold launches·nrows and launches·heads·nrows·head_dim
    // elements (checked above).
    unsafe { b.launch(cfg) }.map(|_| ())
}

/// The buffers of one sample's per-launch reference (`attention_ref_launches_*`).
pub(crate) struct LaunchReference<'a> {
    pub qrows: &'a CudaSlice<f32>,
    /// The reference's own keys and values: `sets` sets back to back.
    pub k: &'a CudaSlice<u16>,
    pub v: &'a CudaSlice<u16>,
    pub sets: usize,
    /// One scale per launch.
    pub scales: &'a CudaSlice<f32>,
    pub rows: &'a CudaSlice<i32>,
    pub causal: bool,
    pub out: &'a mut CudaSlice<f32>,
}

/// Computes the reference of every launch of a sample on its compared rows. `threads`: the
/// block size the module states for it (`attention_ref_launches_*_launch`, REF_L_THREADS in
/// reference.cu).
pub(crate) fn launch_reference_launches(
    stream: &CudaStream,
    func: &CudaFunction,
    threads: u32,
    g: LaunchGeometry,
    a: LaunchReference<'_>,
) -> Result<(), DriverError> {
    let (heads, seq_len, head_dim, nrows) = g.valid().ok_or_else(invalid)?;
    let per_set = g
        .heads
        .checked_mul(g.seq_len)
        .and_then(|n| n.checked_mul(g.head_dim))
        .ok_or_else(invalid)?;
    let (Ok(sets), true) = (i32::try_from(a.sets), a.sets > 0) else {
        return Err(invalid());
    };
    if Some(a.k.len()) != per_set.checked_mul(a.sets)
        || a.v.len() != a.k.len()
        || a.scales.len() != g.launches
        || g.launches.checked_mul(g.nrows) != Some(a.rows.len())
        || g.compact() != Some(a.qrows.len())
        || g.compact() != Some(a.out.len())
    {
        return Err(invalid());
    }
    let causal = i32::from(a.causal);
    let cfg = LaunchConfig {
        grid_dim: (g.heads as u32, g.launches as u32, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = stream.launch_builder(func);
    b.arg(a.qrows)
        .arg(a.k)
        .arg(a.v)
        .arg(a.scales)
        .arg(a.rows)
        .arg(&nrows)
        .arg(&heads)
        .arg(&seq_len)
        .arg(&head_dim)
        .arg(&causal)
        .arg(&sets)
        .arg(a.out);
    // SAFETY: attention_ref_launches_*(const float* qrows, const u16* k, const u16* v,
    // const float* scales, const int* rows, int nrows, int heads, int seq_len, int head_dim,
    // int causal, int sets, float* out): block (h, i) reads qrows and writes out at
    // ((i·heads + h)·nrows) · head_dim ..+ nrows·head_dim, reads rows[i·nrows ..+ nrows]
    // (clamped to 0..seq_len by the kernel), scales[i], and rows < seq_len of slice h of set
    // i % sets of k and v; grid = (heads, launches) and every buffer holds what those
    // indices reach (checked above); block = `threads`, the module's own REF_L_THREADS (the
    // harness is built into ci-gate), which its shared arrays are sized by.
    unsafe { b.launch(cfg) }.map(|_| ())
}

/// Compares spans of device memory with an image (`check_bytes`): span s is
/// `offsets[s+1] - offsets[s]` bytes at the device address `addrs[s]`, compared with
/// `image[offsets[s] ..]`; differing bytes are counted into `mismatches[0]`.
pub(crate) fn launch_check_bytes(
    stream: &CudaStream,
    func: &CudaFunction,
    addrs: &CudaSlice<u64>,
    offsets: &CudaSlice<u64>,
    host_offsets: &[u64],
    image: &CudaSlice<u8>,
    mismatches: &mut CudaViewMut<'_, u64>,
) -> Result<(), DriverError> {
    if mismatches.is_empty() {
        return Err(invalid());
    }
    let cfg = spans_config(addrs.len(), offsets.len(), host_offsets, image.len())?;
    let mut b = stream.launch_builder(func);
    b.arg(addrs).arg(offsets).arg(image).arg(mismatches);
    // SAFETY: check_bytes(const u64* addrs, const u64* offsets, const u8* image,
    // u64* mismatches): block row y reads the bytes addrs[y] ..+ (offsets[y+1] - offsets[y])
    // and image[offsets[y] ..], and adds to mismatches[0]; the caller took each address and length
    // from the driver (cuModuleGetGlobal of a `__constant__` symbol of a module this context
    // holds), and the offsets (uploaded from `host_offsets`, checked by `spans_config` to ascend
    // from 0 to the image's length) partition the image; grid.y = spans.
    unsafe { b.launch(cfg) }.map(|_| ())
}

/// Copies spans of device memory into an image (`copy_bytes`): span s is `offsets[s+1] -
/// offsets[s]` bytes at `addrs[s]`, copied to `image[offsets[s] ..]`.
pub(crate) fn launch_copy_bytes(
    stream: &CudaStream,
    func: &CudaFunction,
    addrs: &CudaSlice<u64>,
    offsets: &CudaSlice<u64>,
    host_offsets: &[u64],
    image: &mut CudaSlice<u8>,
) -> Result<(), DriverError> {
    let cfg = spans_config(addrs.len(), offsets.len(), host_offsets, image.len())?;
    let mut b = stream.launch_builder(func);
    b.arg(addrs).arg(offsets).arg(image);
    // SAFETY: copy_bytes(const u64* addrs, const u64* offsets, u8* image): block row y reads
    // the bytes addrs[y] ..+ (offsets[y+1] - offsets[y]) and writes image[offsets[y] ..+ the
    // same]; the offsets (uploaded from `host_offsets`, checked by `spans_config` to ascend from 0
    // to the image's length) partition the image; the caller took each span from the driver
    // (a `__constant__` section of a module this context holds: a symbol's address less its
    // offset in the section, the section's size); grid.y = spans.
    unsafe { b.launch(cfg) }.map(|_| ())
}

/// The launch of `check_bytes` or `copy_bytes` over `spans` spans of one image: grid row y is
/// span y, up to 16 blocks along it, sized by the longest span. Refused (`invalid`) unless
/// there are 1 to 65,535 spans, both offset arrays hold `spans + 1` entries, and
/// `host_offsets` (what was uploaded as `offsets`) ascend from 0 to `image_len`, so that the
/// spans partition the image and no block reads or writes past it.
fn spans_config(
    spans: usize,
    offsets_len: usize,
    host_offsets: &[u64],
    image_len: usize,
) -> Result<LaunchConfig, DriverError> {
    if spans == 0
        || spans > 65_535
        || offsets_len != spans + 1
        || host_offsets.len() != spans + 1
        || host_offsets.windows(2).any(|w| w[1] < w[0])
        || host_offsets.first() != Some(&0)
        || host_offsets.last() != Some(&(image_len as u64))
    {
        return Err(invalid());
    }
    let longest = host_offsets
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or(1);
    let mut cfg = fill_config(longest);
    cfg.grid_dim.0 = cfg.grid_dim.0.min(16);
    cfg.grid_dim.1 = spans as u32;
    Ok(cfg)
}

/// Blocks of 256 threads for a reduction over `n` elements: at least 16 elements a thread,
/// at most `max_blocks` blocks (each adds to the global result once).
fn reduce_config(n: u64, max_blocks: u32) -> LaunchConfig {
    let blocks = n.div_ceil(256 * 16).clamp(1, u64::from(max_blocks.max(1))) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
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
pub(crate) fn read_launch_constant(
    module: &Arc<cudarc::driver::CudaModule>,
    stream: &Arc<CudaStream>,
    symbol: &str,
) -> Result<[i32; 3], DriverError> {
    let v = read_i32_constant(module, stream, symbol, 3)?;
    Ok([v[0], v[1], v[2]])
}

/// Reads the first `n` i32 of a `__constant__` array of a module (CUDA_ERROR_INVALID_VALUE
/// when the symbol holds fewer bytes).
pub(crate) fn read_i32_constant(
    module: &Arc<cudarc::driver::CudaModule>,
    stream: &Arc<CudaStream>,
    symbol: &str,
    n: usize,
) -> Result<Vec<i32>, DriverError> {
    let global = module.get_global(symbol, stream)?;
    if global.len() < 4 * n {
        return Err(invalid());
    }
    // SAFETY: the symbol holds at least 4·n bytes (checked above), read as n i32.
    let view = unsafe { global.transmute::<i32>(n) }.ok_or_else(invalid)?;
    stream.clone_dtoh(&view)
}

// ---- The sandboxed NVRTC process (`kernel::sandbox`): process-level calls of the child. ----

/// A resource limit the NVRTC child sets on itself before it reads any source.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Limit {
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
pub(crate) fn set_limit(limit: Limit, value: u64) -> std::io::Result<()> {
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
pub(crate) fn close_inherited_descriptors() {
    // SAFETY: close_range closes descriptors 3.. of this process; it runs first thing in the
    // child, before anything in this process opened a descriptor it still uses (std opens none
    // at start-up).
    let _ = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) };
}

/// Takes this process's stdout for the child's answer and points descriptor 1 at stderr, so
/// that nothing else written to stdout (by NVRTC or anything it loads) can corrupt the answer.
pub(crate) fn take_stdout() -> std::io::Result<std::fs::File> {
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

/// Why a shared library could not be preloaded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PreloadError {
    #[error("{} contains a NUL byte", .0.display())]
    NulInPath(std::path::PathBuf),
    /// dlopen failed: what dlerror said.
    #[error("{0}")]
    Dlopen(String),
}

/// Loads the shared library at `path` and keeps it loaded for the life of the process, so
/// that what it needs (its own dependencies) is mapped now, before the sandbox closes the
/// file system.
pub(crate) fn preload_library(path: &std::path::Path) -> Result<(), PreloadError> {
    use std::os::unix::ffi::OsStrExt;
    let cpath = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| PreloadError::NulInPath(path.to_owned()))?;
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
    Err(PreloadError::Dlopen(why))
}

/// Loads NVRTC for good (as compiling does), so that its directory shows in /proc/self/maps.
pub(crate) fn load_nvrtc() -> bool {
    nvrtc_present() && nvrtc_version().is_some()
}

/// Tries to take an exclusive `flock(2)` on `file` without blocking (`gpu::lock`): `Ok(true)`
/// taken, `Ok(false)` another open file description holds it. The lock goes with the
/// descriptor: it ends when the file is closed (or the process ends, however it ends).
pub(crate) fn try_flock_exclusive(file: &std::fs::File) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: flock on a descriptor `file` owns and keeps open across the call; no memory
        // is passed.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return Ok(false),
            _ => return Err(e),
        }
    }
}

/// This process's effective user id.
pub(crate) fn effective_uid() -> u32 {
    // SAFETY: geteuid takes no arguments, touches no memory and cannot fail.
    unsafe { libc::geteuid() }
}

// ---- Probes of the sandbox's tests (`kernel::sandbox`): calls the confined process must not
// be able to make. Test builds only. ----

/// Sends `signal` (0: none, only the permission check) to process `pid` (kill(2)).
#[cfg(test)]
pub(crate) fn send_signal(pid: i32, signal: i32) -> std::io::Result<()> {
    // SAFETY: kill takes two integers and touches no memory of this process.
    if unsafe { libc::kill(pid, signal) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// `unshare(0)`: creates no namespace, and succeeds wherever the call is allowed.
#[cfg(test)]
pub(crate) fn unshare_nothing() -> std::io::Result<()> {
    // SAFETY: unshare with no flags changes nothing and takes no pointer.
    if unsafe { libc::unshare(0) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Reads nothing from process `pid`'s memory (process_vm_readv(2) with no vectors): succeeds
/// wherever the call is allowed on that process.
#[cfg(test)]
pub(crate) fn read_no_memory_of(pid: i32) -> std::io::Result<()> {
    // SAFETY: zero vectors on both sides: nothing is read or written, no pointer followed.
    let n = unsafe { libc::process_vm_readv(pid, std::ptr::null(), 0, std::ptr::null(), 0, 0) };
    if n >= 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// `getpid` by its x32 ABI number (`__X32_SYSCALL_BIT` | 39) on x86-64: ENOSYS on a kernel
/// without x32, the process id with it.
#[cfg(all(test, target_arch = "x86_64"))]
pub(crate) fn x32_getpid() -> std::io::Result<i64> {
    // SAFETY: getpid takes no argument and touches no memory, under either ABI.
    let r = unsafe { libc::syscall(0x4000_0000 | libc::SYS_getpid) };
    if r >= 0 {
        Ok(r)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::spans_config;

    #[test]
    fn spans_that_partition_the_image_launch_one_grid_row_each() {
        let cfg = spans_config(3, 4, &[0, 100, 100, 5000], 5000).expect("a partition");
        assert_eq!(cfg.grid_dim.1, 3, "one grid row a span");
        // The longest span (4,900 bytes) sets the blocks along a row, at most 16.
        assert_eq!(cfg.grid_dim.0, 16);
        let short = spans_config(1, 2, &[0, 512], 512).expect("one span");
        assert_eq!(short.grid_dim, (2, 1, 1));
    }

    #[test]
    fn spans_that_leave_or_overrun_the_image_are_refused() {
        let refused = |spans, offsets_len, host: &[u64], image_len| {
            spans_config(spans, offsets_len, host, image_len).is_err()
        };
        assert!(refused(0, 1, &[0], 0), "no span");
        assert!(refused(2, 3, &[0, 10, 5], 5), "descending offsets");
        assert!(refused(2, 3, &[1, 5, 10], 10), "not from 0");
        assert!(refused(2, 3, &[0, 5, 11], 10), "past the image");
        assert!(refused(2, 3, &[0, 5, 9], 10), "short of the image");
        assert!(
            refused(2, 2, &[0, 5, 10], 10),
            "device offsets of another length"
        );
        assert!(
            refused(2, 4, &[0, 5, 10], 10),
            "host offsets of another count"
        );
        let many = vec![0u64; 65_537];
        assert!(
            refused(65_536, 65_537, &many, 0),
            "more spans than grid rows"
        );
    }
}
