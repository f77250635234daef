// Local-level model: a random-walk state x[t] observed with noise, scales known. The states are
// linked (x[t] depends on x[t-1]): deleting an observation's state changes the model.
data {
  int<lower=0> N;
  vector[N] y;
  real<lower=0> sigma_x;
  real<lower=0> sigma_y;
}
parameters {
  vector[N] x;
}
model {
  if (N > 0) {
    x[1] ~ normal(0, 10);
    x[2:N] ~ normal(x[1:(N - 1)], sigma_x);
  }
  y ~ normal(x, sigma_y);
}
