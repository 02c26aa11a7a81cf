# Sourced, not run: sets PTXAS (NVIDIA's ptxas from CUDA 12.9) and NVDISASM (its disassembler,
# CUDA 13.2's, which reads 12.9's cubins), each unpacked from its pinned PyPI wheel into the
# target directory once; no CUDA install is needed and nothing runs on a GPU. The wheels are
# nvidia-cuda-nvcc-cu12 (40 MB) and nvidia-cuda-nvdisasm (4 MB).
_nv_target="${CARGO_TARGET_DIR:-target}"

# _nv_tool DIR WHEEL==VERSION PATH: unpacks the wheel into DIR unless DIR/PATH is there.
_nv_tool() {
    if [ ! -x "$1/$3" ]; then
        rm -rf "$1"
        python3 -m pip download --no-deps --only-binary=:all: -q -d "$1/wheel" "$2"
        python3 -m zipfile -e "$1"/wheel/*.whl "$1"
        chmod +x "$1/$3"
    fi
}

_nv_tool "$_nv_target/ptxas-12.9.86" nvidia-cuda-nvcc-cu12==12.9.86 nvidia/cuda_nvcc/bin/ptxas
PTXAS="$_nv_target/ptxas-12.9.86/nvidia/cuda_nvcc/bin/ptxas"
_nv_tool "$_nv_target/nvdisasm-13.2.86" nvidia-cuda-nvdisasm==13.2.86 nvidia/cu13/bin/nvdisasm
NVDISASM="$_nv_target/nvdisasm-13.2.86/nvidia/cu13/bin/nvdisasm"
export PTXAS NVDISASM
