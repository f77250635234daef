// An AR(1) series near 100 with a contamination component at 0: y_t ~ (1 - pi) N(mu + phi
// y_{t-1}, sigma) + pi N(0, 1). Near the observed value p(y_t | y_-t, theta) is quadratic to
// rounding (the component at 0 is e^-5000 there); its second mode at 0 lies beyond a trough
// thousands of nats deep.
data {
  int<lower=1> T;
  array[T] real y;
}
parameters {
  real mu;
  real<lower=-1, upper=1> phi;
  real<lower=0> sigma;
  real<lower=0, upper=1> pi;
}
model {
  mu ~ normal(100, 50);
  phi ~ normal(0, 0.5);
  sigma ~ normal(0, 5);
  pi ~ beta(2, 8);
  target += log_mix(pi, normal_lpdf(y[1] | 0, 1), normal_lpdf(y[1] | mu / (1 - phi), sigma));
  for (t in 2:T)
    target += log_mix(pi, normal_lpdf(y[t] | 0, 1),
                      normal_lpdf(y[t] | mu + phi * y[t - 1], sigma));
}
