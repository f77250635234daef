// One positive latent per observation with a normal prior written without T[,] (the prior
// integrates to 1/2 per latent), observed with known noise; log_lik conditional on the latent.
// Issue 35 item 3: exact refits of this program are refused, and the cause named must be the
// unnormalized prior.
data {
  int<lower=1> N;
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
  for (n in 1:N)
    log_lik[n] = normal_lpdf(y[n] | z[n], sigma);
}
