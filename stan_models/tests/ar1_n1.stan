// AR(1) with int<lower=1> N and neither lprior nor log_lik: its observations are dependent, so
// one-observation instances do not give its prior (log p(θ; {y_a}) + log p(θ; {y_b}) −
// log p(θ; {y_a, y_b}) is the prior minus a transition term); the Bayes-factor tools refuse it.
data {
  int<lower=1> N;
  vector[N] y;
}
parameters {
  real<lower=-1, upper=1> phi;
  real<lower=0> s;
}
model {
  phi ~ normal(0, 0.5);
  s ~ normal(0, 1);
  for (n in 2:N) y[n] ~ normal(phi * y[n - 1], s);
}
