// A bounded scale with no prior statement: its implicit density is 1 on (0, 10), which has
// mass 10, so the program's log Z is the uniform(0, 10)-prior model's plus log 10.
//   y[n] ~ normal(0, sigma)
data {
  int<lower=0> N;
  vector[N] y;
}
parameters {
  real<lower=0, upper=10> sigma;
}
model {
  y ~ normal(0, sigma);
}
