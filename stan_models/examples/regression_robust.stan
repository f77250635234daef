// Robust linear regression: Student-t errors with 4 degrees of freedom, otherwise the same
// priors as regression.stan (the third program of the README's three-way comparison).
// For regression.data.json, log Z = -30.238090: a tensor-product grid over (alpha, beta,
// log sigma) covering +-3.75 posterior-ish widths (the grids 120^3 ... 240^3 and a 1.5x wider
// box agree to 1e-11; the same grid gives regression.stan's -29.477367).
data {
  int<lower=1> N;
  vector[N] x;
  vector[N] y;
}
parameters {
  real alpha;
  real beta;
  real<lower=0> sigma;
}
model {
  alpha ~ normal(0, 2);
  beta ~ normal(0, 1);
  target += normal_lpdf(sigma | 0, 1) + log(2);  // normalized half-normal(0, 1)
  y ~ student_t(4, alpha + beta * x, sigma);
}
generated quantities {
  vector[N] log_lik;
  array[N] real y_rep;
  for (n in 1:N) {
    log_lik[n] = student_t_lpdf(y[n] | 4, alpha + beta * x[n], sigma);
    y_rep[n] = student_t_rng(4, alpha + beta * x[n], sigma);
  }
}
