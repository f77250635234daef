// Varying intercepts with a normal likelihood, sigma known, mu and tau unknown: p(y_g | mu, tau)
// is normal in closed form, so exact leave-one-group-out is a 2-D quadrature over (mu, tau)
// Non-centred (a_g = mu + tau z_g): the centred form's funnel makes NUTS diverge on these data
// (benchmarks/truths/crossval/truths_logo.py). N may be 0 (the data instance with no rows).
data {
  int<lower=0> N;
  int<lower=1> J;
  array[N] int<lower=1, upper=J> g;
  vector[N] y;
  real<lower=0> sigma;
}
parameters {
  real mu;
  real<lower=0> tau;
  vector[J] z;
}
model {
  mu ~ normal(0, 5);
  tau ~ normal(0, 1);
  z ~ std_normal();
  y ~ normal(mu + tau * z[g], sigma);
}
