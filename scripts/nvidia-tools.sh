# Sourced, not run: sets PTXAS (NVIDIA's ptxas from CUDA 12.9) and NVDISASM (its disassembler,
# CUDA 13.2's, which reads 12.9's cubins), each unpacked from its pinned PyPI wheel into the
# target directory once; no CUDA install is needed and nothing runs on a GPU. The wheels are
# nvidia-cuda-nvcc-cu12 (40 MB) and nvidia-cuda-nvdisasm (4 MB).
_nv_target="${CARGO_TARGET_DIR:-target}"
_nv_version=12.9.86
_nv_dir="$_nv_target/ptxas-$_nv_version"
PTXAS="$_nv_dir/nvidia/cuda_nvcc/bin/ptxas"
if [ ! -x "$PTXAS" ]; then
    rm -rf "$_nv_dir"
    python3 -m pip download --no-deps --only-binary=:all: -q -d "$_nv_dir/wheel" "nvidia-cuda-nvcc-cu12==$_nv_version"
    python3 -m zipfile -e "$_nv_dir"/wheel/*.whl "$_nv_dir"
    chmod +x "$PTXAS"
fi
_nv_disasm_version=13.2.86
_nv_disasm_dir="$_nv_target/nvdisasm-$_nv_disasm_version"
NVDISASM="$_nv_disasm_dir/nvidia/cu13/bin/nvdisasm"
if [ ! -x "$NVDISASM" ]; then
    rm -rf "$_nv_disasm_dir"
    python3 -m pip download --no-deps --only-binary=:all: -q -d "$_nv_disasm_dir/wheel" "nvidia-cuda-nvdisasm==$_nv_disasm_version"
    python3 -m zipfile -e "$_nv_disasm_dir"/wheel/*.whl "$_nv_disasm_dir"
    chmod +x "$NVDISASM"
fi
export PTXAS NVDISASM
