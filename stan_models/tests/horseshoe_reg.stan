// Linear regression with a (non-regularized) horseshoe prior on D coefficients, for the cost of
// moment matching at thousands of parameters; log_lik per row.
data {
  int<lower=1> N;
  int<lower=1> D;
  matrix[N, D] X;
  vector[N] y;
}
parameters {
  real alpha;
  real<lower=0> sigma;
  real<lower=0> tau;
  vector<lower=0>[D] lambda;
  vector[D] z;
}
transformed parameters {
  vector[D] beta = z .* lambda * tau;
}
model {
  alpha ~ normal(0, 5);
  sigma ~ normal(0, 2);
  tau ~ cauchy(0, 0.1);
  lambda ~ cauchy(0, 1);
  z ~ std_normal();
  y ~ normal(alpha + X * beta, sigma);
}
generated quantities {
  vector[N] log_lik;
  {
    vector[N] mu = alpha + X * beta;
    for (n in 1:N) log_lik[n] = normal_lpdf(y[n] | mu[n], sigma);
  }
}
