// An AR(1) series whose innovations are a mixture with a component never visited by the data
// (issue 44, case 2): e_t = y_t - phi y_{t-1} ~ (1 - w) N(0, sigma) + w N(far, sigma), with w
// and far fixed data (far ~ 25 sigma: no data point there); y_1 ~ N(0, sigma / sqrt(1 - phi^2)).
// Near the observed value p(y_t | y_-t, theta) is Gaussian to rounding; the far component puts
// a second mode ~far above phi y_{t-1}, beyond a trough hundreds of nats deep, whose mass
// (w e^{-(phi far)^2 / (2 (1 + phi^2) sigma^2)} relative) matters at draws with small phi.
data {
  int<lower=2> T;
  array[T] real y;
  real<lower=0, upper=1> w;
  real far;
}
parameters {
  real<lower=-1, upper=1> phi;
  real<lower=0> sigma;
}
model {
  phi ~ normal(0, 0.5);
  sigma ~ normal(1, 0.5);
  y[1] ~ normal(0, sigma / sqrt(1 - square(phi)));
  for (t in 2:T)
    target += log_mix(w, normal_lpdf(y[t] - phi * y[t - 1] | far, sigma),
                      normal_lpdf(y[t] - phi * y[t - 1] | 0, sigma));
}
