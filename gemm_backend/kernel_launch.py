"""Launch shapes for the CUDA kernels in kernels/*.cu (cupy RawModule functions).

Two shapes: one warp per matrix row (row kernels loop over rows, lanes walk the columns, so loads
are coalesced), and a grid-stride loop over the elements of an output. Both cap the grid at a
few blocks per multiprocessor and let the kernels loop, so a launch costs the same for any size.
"""
import hashlib
import os
from pathlib import Path

from .arrays import cupy_module, multiprocessor_count
from .errors import BackendError

THREADS = 256
WARPS_PER_BLOCK = THREADS // 32
ROW_BLOCKS_PER_SM = 16
ELEMENT_BLOCKS_PER_SM = 32
PACKAGE_DIR = Path(__file__).parent
# Headers shared by several kernel families (gate_tiles.cuh) and the kernels of the top-level
# backends; each scheme package keeps its own kernels in <package>/kernels. File names are unique
# across these folders, so a kernel is named by its file name alone.
SHARED_KERNEL_DIR = PACKAGE_DIR / "kernels"
KERNEL_DIRS = (SHARED_KERNEL_DIR, PACKAGE_DIR / "ozaki" / "kernels", PACKAGE_DIR / "native" / "kernels")
# Shared memory on Hopper: a block may opt into 227 KiB; a multiprocessor has 228 KiB, of which the
# driver keeps 1 KiB per resident block.
SHARED_LIMIT = 227 * 1024
SHARED_PER_SM = 228 * 1024
SHARED_RESERVED = 1024


def shared_limit(blocks_per_sm: int) -> int:
    """Dynamic shared memory one block may take when blocks_per_sm of them share a multiprocessor."""
    return SHARED_LIMIT if blocks_per_sm == 1 else SHARED_PER_SM // blocks_per_sm - SHARED_RESERVED


def kernel_path(file_name: str) -> Path:
    """The CUDA source called file_name in the one kernel folder (KERNEL_DIRS) that holds it."""
    found = [folder / file_name for folder in KERNEL_DIRS if (folder / file_name).is_file()]
    if len(found) != 1:
        raise BackendError(f"kernel source {file_name!r} is in {len(found)} of the kernel folders, not one")
    return found[0]


def include_options(path: Path) -> tuple:
    """NVRTC options for the source at path: C++17, headers beside it and the shared headers."""
    return ("--std=c++17", f"-I{path.parent}", f"-I{SHARED_KERNEL_DIR}")


def raw_module(file_name: str, name_expressions, definitions: tuple = ()):
    """A cupy RawModule of the kernel source file_name (kernel_path; include_options), compiled
    with the -D options `definitions`."""
    cp = cupy_module()
    path = kernel_path(file_name)
    return cp.RawModule(code=path.read_text(), options=include_options(path) + tuple(definitions),
                        name_expressions=list(name_expressions))


def arch_kernel(file_name: str, name: str, definitions: tuple, arch: str):
    """The cupy RawKernel `name` (a name expression) of the kernel source file_name compiled by
    NVRTC for the architecture-specific target `arch` (e.g. "sm_90a", which wgmma needs and cupy's
    RawModule cannot ask for: it adds its own -arch). The cubin is cached on disk under cupy's
    kernel cache folder, keyed by the sources of every kernel folder, the options and NVRTC's
    version."""
    cp = cupy_module()
    path = kernel_path(file_name)
    options = include_options(path) + tuple(definitions) + (f"-arch={arch}", "--device-as-default-execution-space")
    cubin_path, lowered = _cached_cubin(path, name, options)
    return cp.RawModule(path=str(cubin_path)).get_function(lowered)


def _cached_cubin(path: Path, name: str, options: tuple) -> tuple:
    """(cubin file, lowered name) of `name` in the source at path under NVRTC `options`."""
    from cupy_backends.cuda.libs import nvrtc

    digest = hashlib.sha256(repr((name, options, nvrtc.getVersion())).encode())
    for folder in KERNEL_DIRS:
        for source in sorted(folder.glob("*.cu*")):
            digest.update(source.name.encode() + source.read_bytes())
    folder = Path(os.environ.get("CUPY_CACHE_DIR", Path.home() / ".cupy" / "kernel_cache")) / "arch_specific"
    cubin_path = folder / f"{digest.hexdigest()}.cubin"
    name_path = cubin_path.with_suffix(".name")
    if cubin_path.is_file() and name_path.is_file():
        return cubin_path, name_path.read_text()
    program = nvrtc.createProgram(path.read_text(), path.name, [], [])
    try:
        nvrtc.addNameExpression(program, name)
        try:
            nvrtc.compileProgram(program, list(options))
        except nvrtc.NVRTCError as error:
            raise BackendError(f"NVRTC could not compile {path.name} for {name}: {error}\n"
                               f"{nvrtc.getProgramLog(program)}") from None
        cubin, lowered = nvrtc.getCUBIN(program), nvrtc.getLoweredName(program, name)
    finally:
        nvrtc.destroyProgram(program)
    folder.mkdir(parents=True, exist_ok=True)
    for target, content in ((cubin_path, cubin), (name_path, lowered.encode())):
        partial = target.with_suffix(f".{os.getpid()}.partial")
        partial.write_bytes(content)
        os.replace(partial, target)  # whole files only, whoever else compiles the same kernel
    return cubin_path, lowered


def row_stride(x) -> int:
    """Elements between rows of the 2-D cupy array x, whose columns must be adjacent."""
    if x.shape[1] > 1 and x.strides[1] != x.itemsize:
        raise BackendError("row kernels need rows with unit column stride")
    return x.strides[0] // x.itemsize


def launch_per_row(function, rows: int, args: tuple, shared_mem: int = 0) -> None:
    """function(args) with one warp per row over `rows` rows, on the current device."""
    _launch(function, -(-rows // WARPS_PER_BLOCK), ROW_BLOCKS_PER_SM, args, shared_mem)


def per_row_int32(function, x, bits: int, nonfinite=None):
    """(values, finite) from a row kernel with the signature (x, rows, cols, row_stride, bits,
    int32 out[rows], int32 *nonfinite): one int32 per row of the 2-D cupy array x, and a 0-d
    bool array (on the device) that is False when the kernel flagged NaN or Inf. nonfinite: the
    caller's int32 flag (1,) for the kernel to set, kept across calls (finite then covers them
    all); None: a new one."""
    cp = cupy_module()
    rows, cols = x.shape
    values = cp.empty(rows, cp.int32)
    if nonfinite is None:
        nonfinite = cp.zeros(1, cp.int32)
    if rows:
        launch_per_row(function, rows, (x, cp.int64(rows), cp.int32(cols), cp.int64(row_stride(x)), cp.int32(bits),
                                        values, nonfinite))
    return values, nonfinite[0] == 0


def launch_per_element(function, count: int, args: tuple, blocks_per_sm: int = ELEMENT_BLOCKS_PER_SM,
                       shared_mem: int = 0) -> None:
    """function(args) with one thread per element over `count` elements (grid-stride), at most
    blocks_per_sm blocks per multiprocessor, each with shared_mem bytes of dynamic shared memory."""
    _launch(function, -(-count // THREADS), blocks_per_sm, args, shared_mem)


def launch_per_column_group(function, columns: int, blocks_per_sm: int, args: tuple) -> None:
    """function(args) on a persistent grid of THREADS-thread blocks, at most blocks_per_sm per
    multiprocessor, for kernels that give each of `columns` columns to a group of a block's threads
    and share the columns out among the blocks themselves."""
    _launch(function, columns, blocks_per_sm, args, 0)


def persistent_blocks(wanted_blocks: int, blocks_per_sm: int) -> int:
    """Blocks of a persistent grid: as many as the work wants, at most blocks_per_sm per
    multiprocessor (the kernels loop over the rest), at least one."""
    return max(1, min(multiprocessor_count() * blocks_per_sm, wanted_blocks))


def _launch(function, wanted_blocks: int, blocks_per_sm: int, args: tuple, shared_mem: int) -> None:
    function((persistent_blocks(wanted_blocks, blocks_per_sm),), (THREADS,), args, shared_mem=shared_mem)
