#include "bench/support.h"

#include <algorithm>
#include <cmath>

namespace mizarmp::bench {

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

Stats Summarize(std::vector<double> v) {
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto rank = [&v](double p) {
    size_t k = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
    if (k == 0) k = 1;
    return v[std::min(k, v.size()) - 1];
  };
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  s.p90 = rank(0.90);
  s.p99 = rank(0.99);
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  return s;
}

}  // namespace mizarmp::bench
