// Minnesota radon (Gelman & Hill 2007): log radon of 919 homes in 85 counties, varying county
// intercepts with partial pooling and a floor effect. Data: benchmarks/data/radon_mn.json
// (posteriordb's radon_mn). Leave-one-county-out: stanlogz loo --group county_idx.
data {
  int<lower=0> N;
  int<lower=1> J;
  array[N] int<lower=1, upper=J> county_idx;
  vector[N] floor_measure;
  vector[N] log_radon;
}
parameters {
  real mu_a;
  real<lower=0> sigma_a;
  real beta;
  real<lower=0> sigma_y;
  vector[J] a;
}
model {
  mu_a ~ normal(0, 10);
  sigma_a ~ normal(0, 1);
  beta ~ normal(0, 10);
  sigma_y ~ normal(0, 1);
  a ~ normal(mu_a, sigma_a);
  log_radon ~ normal(a[county_idx] + beta * floor_measure, sigma_y);
}
