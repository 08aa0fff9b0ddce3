# Sourced on the GPU machine (through the device tool, nothing carried, no ksmith build):
#   source bench/probes/cl_probe_setup.sh && /tmp/cl_probe FILE.cl KERNEL GX,GY,GZ LX,LY,LZ FLOATS...
# registers NVIDIA's OpenCL driver and builds cl_probe.cpp (beside this file) as /tmp/cl_probe.
mkdir -p /etc/OpenCL/vendors
echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
g++ -O2 -o /tmp/cl_probe "$(dirname "${BASH_SOURCE[0]}")/cl_probe.cpp" \
  "$(ldconfig -p | awk '/libOpenCL\.so(\.1)? / {print $NF; exit}')" || exit 1
