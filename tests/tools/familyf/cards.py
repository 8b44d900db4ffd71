"""Cards as cudaMemGetInfo reports their total, and what a process holds outside the caching
allocator (the CUDA context with cuBLAS/cuDNN workspaces; NCCL's own buffers in a distributed job)."""
GiB = 1 << 30
MiB = 1 << 20

A100_40GB = ("NVIDIA A100-SXM4-40GB", 42297524224)
A100_80GB = ("NVIDIA A100-SXM4-80GB", 85100068864)
H100_80GB = ("NVIDIA H100 80GB HBM3", 85045870592)
L4 = ("NVIDIA L4", 23580639232)
RTX4090 = ("NVIDIA GeForce RTX 4090", 25393692672)
A10G = ("NVIDIA A10G", 23609475072)
L40S = ("NVIDIA L40S", 47697362944)

CONTEXT = 530 * MiB
NCCL = 700 * MiB
