// A linear Poisson autoregression for counts (INGARCH(1,0)-like): y[t] enters the rate of
// y[t + 1], so the likelihood does not factorize over the observations.
data {
  int<lower=1> T;
  array[T] int<lower=0> y;
}
parameters {
  real<lower=0> alpha;
  real<lower=0, upper=1> beta;
}
model {
  alpha ~ gamma(2, 1);
  beta ~ beta(2, 2);
  y[1] ~ poisson(alpha / (1 - beta));
  for (t in 2:T)
    y[t] ~ poisson(alpha + beta * y[t - 1]);
}
