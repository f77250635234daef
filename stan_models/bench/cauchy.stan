// Product of two-component Cauchy mixtures, Jia & Seljak eq. 6, flat prior U(-100,100)^N
// (benchmarks/evidence.py: cauchy48; Stan's logit transform is the benchmark's unconstrained scale).
data {
  int<lower=1> N;
  real mu;
}
parameters {
  vector<lower=-100, upper=100>[N] x;
}
model {
  target += -N * log(200);
  for (i in 1:N) {
    target += log_mix(0.5, cauchy_lpdf(x[i] | mu, 1), cauchy_lpdf(x[i] | -mu, 1));
  }
}
