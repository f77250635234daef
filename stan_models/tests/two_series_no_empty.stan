// Two observed series per time point whose program rejects data without observations (as
// posteriordb sir's ODE solver rejects an empty array of times): the density difference's
// empty baseline fails at every point, and two sampled arrays leave no conditional source.
// loo refuses before sampling, naming lfo and kfold over whole time points.
data {
  int<lower=0> N;
  array[N] real a;
  array[N] real b;
}
parameters {
  real mu;
  real<lower=0> sigma;
}
model {
  if (N == 0) {
    reject("no observations");
  }
  mu ~ normal(0, 5);
  sigma ~ lognormal(0, 1);
  for (n in 1:N) {
    if (n == 1) {
      a[n] ~ normal(mu, sigma);
    } else {
      a[n] ~ normal(mu + 0.5 * (a[n - 1] - mu), sigma);
    }
  }
  b ~ normal(mu + 1, sigma);
}
