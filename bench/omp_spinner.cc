// A neighbour for contention benchmarks (bench/with_neighbour.sh omp2): a two-thread OpenMP job that, like a
// compute-bound PyTorch job, runs short parallel regions back to back and spins in their barriers, for
// SECONDS seconds (default 600). Usage: omp_spinner [SECONDS]
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 600.0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::vector<double> data(1 << 16, 1.0);
  double sink = 0;
  while (std::chrono::steady_clock::now() < end) {
#pragma omp parallel for num_threads(2) schedule(static) reduction(+ : sink)
    for (int i = 0; i < static_cast<int>(data.size()); ++i) sink += data[static_cast<size_t>(i)] * 1.0000001;
  }
  std::printf("%f\n", sink);
  return 0;
}
