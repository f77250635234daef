// latent_trunc_lower1.stan with int<lower=4> N: no instance with fewer than four observations
// (the integrated route's baselines hold three at most), so that route is refused.
data {
  int<lower=4> N;
  vector[N] y;
}
parameters {
  real<lower=0> sigma;
  vector<lower=0>[N] z;
}
model {
  sigma ~ lognormal(-0.7, 0.3);
  for (n in 1:N) z[n] ~ normal(0, 1) T[0, ];
  y ~ normal(z, sigma);
}
generated quantities {
  vector[N] log_lik;
  for (n in 1:N) log_lik[n] = normal_lpdf(y[n] | z[n], sigma);
}
