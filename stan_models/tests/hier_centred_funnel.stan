data { int<lower=1> N; int<lower=1> J; array[N] int<lower=1, upper=J> g; vector[N] y; }
parameters { real mu; real<lower=0> tau; vector[J] a; }
model { mu ~ normal(0, 5); tau ~ normal(0, 1); a ~ normal(mu, tau); y ~ normal(a[g], 1); }
