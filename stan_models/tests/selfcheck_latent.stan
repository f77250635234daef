// Issue 44 case 1, for the self-check (loo's verify): one positive latent per observation with
// its half-normal prior written with T[0, ] (normalized), a known noise scale sigma, a log_lik
// conditional on the latent, and int<lower=1> N. PSIS on that log_lik leaves points
// at k-hat 0.5-0.7 that are each several of their mc se too high; the exact refits (latent
// integrated out by the augmented bridge) are cheap. The observations are independent:
// log p(y_i | y_-i) = log p(y_i), p(y_i) = 2 N(y_i | 0, s) Phi(y_i / (sigma s)), s = sqrt(1 + sigma^2).
data {
  int<lower=1> N;
  vector[N] y;
  real<lower=0> sigma;
}
parameters {
  vector<lower=0>[N] z;
}
model {
  for (n in 1:N) z[n] ~ normal(0, 1) T[0, ];
  y ~ normal(z, sigma);
}
generated quantities {
  vector[N] log_lik;
  for (n in 1:N) log_lik[n] = normal_lpdf(y[n] | z[n], sigma);
}
