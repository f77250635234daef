// Neal's funnel, Jia & Seljak eq. 4 (a = 1, b = 0.5) with the constant density of the box prior
// U(-4,4) x U(-30,30)^(N-1) but not the box itself (benchmarks/evidence.py: funnel16).
data {
  int<lower=2> N;
}
parameters {
  real v;
  vector[N - 1] x;
}
model {
  target += -log(8) - (N - 1) * log(60);
  target += normal_lpdf(v | 0, 1);
  target += normal_lpdf(x | 0, exp(v / 2));
}
