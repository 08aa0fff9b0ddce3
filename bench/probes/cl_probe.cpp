// cl_probe: times a hand-written OpenCL C kernel with a launch geometry of its own,
// to try a code shape on a device before the compiler learns to generate it (the
// kernel bodies of `ksmith run --kernel` keep the naive launch geometry).
//
//   cl_probe FILE.cl KERNEL GX,GY,GZ LX,LY,LZ FLOATS... [-D NAME=VALUE ...] [-O BUILD-OPTION ...]
//
// One buffer per FLOATS argument, in the kernel's parameter order, filled with the
// same pseudo-random values in [-1, 1) every time; the kernel runs 3 times, then 25
// timed runs (profiling events); prints the median milliseconds and a checksum of
// the last buffer (its output) after one more run from the buffers as first filled,
// so that variants can be checked against each other and a kernel that reads what
// an earlier run left (a read moved above a barrier) shows.
// With CL_PROBE_BINARY=FILE, the program's binary (NVIDIA: its PTX) is written there;
// with CL_PROBE_LOG=1 the build log is printed (NVIDIA's -cl-nv-verbose: registers);
// with CL_PROBE_OUT=FILE the last buffer after the timed runs is written there (raw
// little-endian float32), for an error check on the host (bench/probes/mma_error.py).
// Built on the GPU machine by bench/probes/cl_probe_setup.sh (as /tmp/cl_probe).
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

void check(cl_int err, const char *what) {
  if (err == CL_SUCCESS) return;
  std::fprintf(stderr, "cl_probe: %s failed: %d\n", what, err);
  std::exit(1);
}

std::vector<size_t> triple(const char *text) {
  std::vector<size_t> v;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) v.push_back(std::stoul(part));
  if (v.size() != 3) {
    std::fprintf(stderr, "cl_probe: '%s' is not X,Y,Z\n", text);
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: cl_probe FILE.cl KERNEL GX,GY,GZ LX,LY,LZ FLOATS... [-D NAME=VALUE ...]\n");
    return 2;
  }
  std::ifstream file(argv[1]);
  if (!file) {
    std::fprintf(stderr, "cl_probe: cannot read %s\n", argv[1]);
    return 2;
  }
  std::stringstream text;
  text << file.rdbuf();
  const std::string source = text.str();
  const std::vector<size_t> global = triple(argv[3]), local = triple(argv[4]);
  std::vector<size_t> sizes;
  std::string options = "-cl-std=CL1.2";
  for (int i = 5; i < argc; ++i) {
    if (std::string(argv[i]) == "-D" && i + 1 < argc) {
      options += std::string(" -D ") + argv[++i];
      continue;
    }
    if (std::string(argv[i]) == "-O" && i + 1 < argc) {
      options += std::string(" ") + argv[++i];
      continue;
    }
    sizes.push_back(std::stoul(argv[i]));
  }

  cl_uint n = 0;
  check(clGetPlatformIDs(0, nullptr, &n), "clGetPlatformIDs");
  std::vector<cl_platform_id> platforms(n);
  check(clGetPlatformIDs(n, platforms.data(), nullptr), "clGetPlatformIDs");
  cl_device_id device = nullptr;
  for (cl_platform_id p : platforms)
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_GPU, 1, &device, nullptr) == CL_SUCCESS) break;
  if (!device) check(clGetDeviceIDs(platforms.at(0), CL_DEVICE_TYPE_ALL, 1, &device, nullptr), "clGetDeviceIDs");
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  check(err, "clCreateContext");
  cl_command_queue queue = clCreateCommandQueue(context, device, CL_QUEUE_PROFILING_ENABLE, &err);
  check(err, "clCreateCommandQueue");
  const char *src = source.c_str();
  cl_program program = clCreateProgramWithSource(context, 1, &src, nullptr, &err);
  check(err, "clCreateProgramWithSource");
  if (clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr) != CL_SUCCESS) {
    size_t len = 0;
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &len);
    std::string log(len, '\0');
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, len, log.data(), nullptr);
    std::fprintf(stderr, "cl_probe: build failed:\n%s\n", log.c_str());
    return 1;
  }
  if (std::getenv("CL_PROBE_LOG")) {
    size_t len = 0;
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &len);
    std::string log(len, '\0');
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, len, log.data(), nullptr);
    std::printf("%s\n", log.c_str());
  }
  if (const char *path = std::getenv("CL_PROBE_BINARY")) {
    size_t size = 0;
    clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr);
    std::string binary(size, '\0');
    unsigned char *data = reinterpret_cast<unsigned char *>(binary.data());
    clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof data, &data, nullptr);
    std::ofstream(path, std::ios::binary) << binary;
  }
  cl_kernel kernel = clCreateKernel(program, argv[2], &err);
  check(err, "clCreateKernel");
  std::vector<cl_mem> buffers;
  std::vector<std::vector<float>> initial;
  uint32_t state = 12345;
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<float> &host = initial.emplace_back(sizes[i]);
    for (float &v : host) {
      state = state * 1664525u + 1013904223u;
      v = static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
    }
    cl_mem b =
        clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizes[i] * sizeof(float), host.data(), &err);
    check(err, "clCreateBuffer");
    check(clSetKernelArg(kernel, static_cast<cl_uint>(i), sizeof(cl_mem), &b), "clSetKernelArg");
    buffers.push_back(b);
  }
  std::vector<double> ms;
  for (int run = 0; run < 28; ++run) {
    cl_event event;
    check(clEnqueueNDRangeKernel(queue, kernel, 3, nullptr, global.data(), local.data(), 0, nullptr, &event),
          "clEnqueueNDRangeKernel");
    check(clWaitForEvents(1, &event), "clWaitForEvents");
    cl_ulong start = 0, end = 0;
    clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr);
    clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr);
    clReleaseEvent(event);
    if (run >= 3) ms.push_back((end - start) * 1e-6);
  }
  std::sort(ms.begin(), ms.end());
  for (size_t i = 0; i < buffers.size(); ++i)
    check(clEnqueueWriteBuffer(queue, buffers[i], CL_TRUE, 0, initial[i].size() * sizeof(float), initial[i].data(), 0,
                               nullptr, nullptr),
          "clEnqueueWriteBuffer");
  check(clEnqueueNDRangeKernel(queue, kernel, 3, nullptr, global.data(), local.data(), 0, nullptr, nullptr),
        "clEnqueueNDRangeKernel");
  std::vector<float> out(sizes.back());
  check(clEnqueueReadBuffer(queue, buffers.back(), CL_TRUE, 0, out.size() * sizeof(float), out.data(), 0, nullptr,
                            nullptr),
        "clEnqueueReadBuffer");
  if (const char *path = std::getenv("CL_PROBE_OUT"))
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char *>(out.data()), static_cast<std::streamsize>(out.size() * sizeof(float)));
  double sum = 0, abs_sum = 0;
  for (float v : out) sum += v, abs_sum += std::fabs(v);
  std::printf("%s %s: %.4f ms (min %.4f)  checksum %.6e %.6e\n", argv[1], argv[2], ms[ms.size() / 2], ms.front(), sum,
              abs_sum);
  return 0;
}
