// A scale with a half-Cauchy prior written the way most Stan programs write it: the bound
// restricts sigma to (0, inf) but the density is the full Cauchy's, so the prior has mass 1/2
// and the program's log Z is the half-Cauchy model's minus log 2.
//   sigma ~ half-Cauchy(0, s);  y[n] ~ normal(0, sigma)
data {
  int<lower=0> N;
  vector[N] y;
  real<lower=0> s;
}
parameters {
  real<lower=0> sigma;
}
model {
  sigma ~ cauchy(0, s);
  y ~ normal(0, sigma);
}
