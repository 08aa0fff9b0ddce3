# Sourced by the probes (gpu_gemm_probe.sh, gpu_conv_probe.sh) on the H100 machine:
# registers NVIDIA's OpenCL driver and builds bench/cl_probe.cpp as /tmp/cl_probe.
mkdir -p /etc/OpenCL/vendors
echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
g++ -O2 -o /tmp/cl_probe bench/cl_probe.cpp "$(ldconfig -p | awk '/libOpenCL\.so(\.1)? / {print $NF; exit}')" || exit 1
