// Stationary AR(1) latent states (phi, s known) plus an unknown level mu, observed with noise.
data {
  int<lower=0> N;
  vector[N] y;
  real<lower=-1, upper=1> phi;
  real<lower=0> s;
  real<lower=0> sigma_y;
}
parameters {
  real mu;
  vector[N] x;
}
model {
  mu ~ normal(0, 2);
  if (N > 0) {
    x[1] ~ normal(0, s / sqrt(1 - phi^2));
    x[2:N] ~ normal(phi * x[1:(N - 1)], s);
  }
  y ~ normal(mu + x, sigma_y);
}
