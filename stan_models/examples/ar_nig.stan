// AR(p) time series with a conjugate normal-inverse-gamma prior (the first p values are
// conditioned on, not modelled):
//   y[t] ~ normal(b[1] + b[2] y[t-p] + ... + b[p+1] y[t-1], sigma),  t = p+1..N
//   b | sigma ~ normal(0, sigma * b_scale),  sigma^2 ~ inv_gamma(a0, b0).
// Every evidence, and so every M-step-ahead predictive density log p(y[t+1:t+M] | y[1:t]), is
// in closed form (benchmarks/truths/crossval/truths.py: ar_nig_log_evidence).
data {
  int<lower=1> P;
  int<lower=P + 1> N;
  vector[N] y;
  real<lower=0> b_scale;
  real<lower=0> a0;
  real<lower=0> b0;
}
parameters {
  vector[P + 1] b;
  real<lower=0> sigma2;
}
model {
  real sigma = sqrt(sigma2);
  sigma2 ~ inv_gamma(a0, b0);
  b ~ normal(0, sigma * b_scale);
  for (t in (P + 1):N)
    y[t] ~ normal(b[1] + dot_product(b[2:(P + 1)], y[(t - P):(t - 1)]), sigma);
}
