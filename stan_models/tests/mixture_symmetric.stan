// Two normal components with equal weights and no ordering of their means: the posterior has
// two modes that differ only by the labels (mu swapped), as a mixture's or an LDA's topics
// do. Chains in different modes disagree on every parameter, but any held-out observation's
// density is the same in both.
data {
  int<lower=1> N;
  vector[N] y;
}
parameters {
  vector[2] mu;
}
model {
  mu ~ normal(0, 5);
  for (n in 1:N) {
    target += log_mix(0.5, normal_lpdf(y[n] | mu[1], 1), normal_lpdf(y[n] | mu[2], 1));
  }
}
