/*
 * slow_test.c — the one statistical test behind every slow-edge claim, from
 * op durations (slow.c) and from step metrics (mset.c): were each of k
 * samples slow with the chance the comparable samples give, independently,
 * how likely would s or more of them be? A claim is made only when that
 * chance is at most AN_SLOW_ALPHA (or the caller's alpha: a watch that
 * judges window after window asks less per window) over the number of
 * claims tested (Bonferroni), so a job with nothing slow names nothing slow with a chance
 * of at most AN_SLOW_ALPHA, whatever its size.
 *
 * With one chance for all (the binomial tail) the sum runs from s upwards,
 * its first term in log space and each next one by the ratio of the two, and
 * stops once the terms no longer count; s
 * at or below the mean gives a tail of a half or more, which is no claim,
 * and returns 1 at once. With a chance per sample (the Poisson-binomial
 * tail) the exact dynamic programme costs O(k^2): beyond AN_SLOW_DP_MAX
 * samples Hoeffding's bound on the same tail stands in for it.
 */
#include <math.h>

#include "analyze/internal.h"

double an_binomial_tail(uint64_t k, uint64_t s, double p) {
  if (s == 0) return 1;
  if (s > k) return 0;
  if (p <= 0) return 0;
  if (p >= 1) return 1;
  if ((double)s <= (double)k * p) return 1; /* at or below the mean: half or more, no claim */
  const double lq = log1p(-p), lp = log(p);
  const double lt = lgamma((double)k + 1) - lgamma((double)s + 1) - lgamma((double)(k - s) + 1) + (double)s * lp +
                    (double)(k - s) * lq;
  double t = exp(lt), sum = 0;
  if (t == 0) return 0; /* under 1e-308: beyond any claim's bound */
  const double r = p / (1 - p);
  for (uint64_t j = s; j <= k; j++) {
    sum += t;
    if (t < sum * 1e-17) break; /* past the mode the terms only fall */
    t *= (double)(k - j) / ((double)j + 1) * r;
  }
  return sum < 1 ? sum : 1;
}

double an_upper_tail(const double* p, double p_all, size_t k, size_t s, double* dp) {
  if (!p) return an_binomial_tail(k, s, p_all);
  if (s == 0) return 1;
  if (s > k) return 0;
  if (k > AN_SLOW_DP_MAX) { /* Hoeffding's bound on the same tail: O(k) */
    double mean = 0;
    for (size_t i = 0; i < k; i++) mean += p[i];
    double d = (double)s / (double)k - mean / (double)k;
    return d > 0 ? exp(-2.0 * (double)k * d * d) : 1;
  }
  dp[0] = 1;
  for (size_t j = 1; j <= k; j++) dp[j] = 0;
  for (size_t i = 0; i < k; i++) {
    double pi = p[i];
    for (size_t j = i + 1; j > 0; j--) dp[j] = dp[j] * (1 - pi) + dp[j - 1] * pi;
    dp[0] *= 1 - pi;
  }
  double tail = 0;
  for (size_t j = s; j <= k; j++) tail += dp[j];
  return tail;
}

int an_slow_claim(double tail, size_t tested, double alpha) { return tested > 0 && tail <= alpha / (double)tested; }
