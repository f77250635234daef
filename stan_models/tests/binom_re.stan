// Seeds-like random effects: one latent z[i] per unit in a binomial-logit model, sigma known.
data {
  int<lower=0> I;
  array[I] int<lower=0> n;
  array[I] int<lower=0> y;
  real<lower=0> sigma;
}
parameters {
  real mu;
  vector[I] z;
}
model {
  mu ~ normal(0, 1);
  z ~ std_normal();
  y ~ binomial_logit(n, mu + sigma * z);
}
