// Eight schools (Rubin 1981), non-centered: one effect per school, a per-observation latent.
//   y[j] ~ normal(mu + tau * eta[j], sigma[j]),  eta[j] ~ normal(0, 1),
//   mu ~ normal(0, 5),  tau ~ half-normal(0, 5) (normalized: + log 2).
// Marginally y[j] | mu, tau ~ normal(mu, sqrt(sigma[j]^2 + tau^2)), so every leave-one-out
// term log p(y_j | y_-j) is a 2-D integral over (mu, tau); benchmarks/truths/crossval/truths.py computes
// them by quadrature (README of this folder lists the values).
data {
  int<lower=1> J;
  vector[J] y;
  vector<lower=0>[J] sigma;
}
parameters {
  real mu;
  real<lower=0> tau;
  vector[J] eta;
}
model {
  mu ~ normal(0, 5);
  target += normal_lpdf(tau | 0, 5) + log2();
  eta ~ std_normal();
  y ~ normal(mu + tau * eta, sigma);
}
generated quantities {
  // log p(y_j | mu, tau, eta_j): conditional on the school's own effect, so PSIS-LOO from it
  // is unreliable (high k-hat); stanlogz kfold --k 8 gives the exact leave-one-out values
  vector[J] log_lik;
  for (j in 1:J)
    log_lik[j] = normal_lpdf(y[j] | mu + tau * eta[j], sigma[j]);
}
