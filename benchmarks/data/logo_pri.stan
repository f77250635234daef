data {
  int<lower=1> n_obs;
  int<lower=1> n_grp;
  array[n_obs] int<lower=1, upper=n_grp> grp;
  array[n_obs] int<lower=0> count;
}
parameters {
  real alpha;
  real<lower=0> sigma;
  vector[n_grp] eta;
}
model {
  alpha ~ normal(1, 1.5);
  sigma ~ exponential(1);
  eta ~ normal(0, 1);
  count ~ poisson_log(alpha + sigma * eta[grp]);
}
