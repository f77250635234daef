// Every construct the constants-kept rewrite (stanlogz.stan.constants) must handle: a '~' over
// two lines, truncation inside a brace-less loop, a discrete '~', user-defined _lpdf / _lpmf
// reached through '~' and through _lupdf, and a comment holding '~'. Its full log density is
// closed-form (tests/stan/test_backends.py).
functions {
  real shifted_lpdf(real x, real m) {
    return normal_lupdf(x | m, 2);
  }
  real counts_lpmf(int k, real lam) {
    return poisson_lupmf(k | lam);
  }
}
data {
  int<lower=1> N;
  vector[N] y;
  array[N] int<lower=0> k;
  real L;
}
parameters {
  real mu;
  real<lower=0> lam;
}
model {
  mu ~ normal(0,
              3);  // y ~ nothing: a '~' in a comment
  for (n in 1:N)
    y[n] ~ normal(mu, 1) T[L, ];
  k ~ poisson(lam);
  lam ~ exponential(1);
  target += shifted_lupdf(y[1] | mu);
  k[1] ~ counts(lam);
}
