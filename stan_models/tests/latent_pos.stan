// One positive latent per observation, its half-normal prior written without T[,] (half of a
// normalized density), sigma known, and a log_lik conditional on the latent: PSIS on that
// log_lik is far off (each z_i is informed by y_i alone); log_lik = "integrated" integrates
// z_i out. Exact: p(y_i) = 2 N(y_i | 0, sqrt(1 + sigma^2)) Phi(y_i / (sigma sqrt(1 + sigma^2))).
data {
  int<lower=0> N;
  vector[N] y;
  real<lower=0> sigma;
}
parameters {
  vector<lower=0>[N] z;
}
model {
  z ~ normal(0, 1);
  y ~ normal(z, sigma);
}
generated quantities {
  vector[N] log_lik;
  for (n in 1:N) log_lik[n] = normal_lpdf(y[n] | z[n], sigma);
}
