// A location under Student-t(3) noise with a normal prior: heavier tails than normal_mean, one
// outlying observation in t_location.data.json. No closed form: log p(y_i | y_-i) is a 1-D
// quadrature over mu (benchmarks/anytime_commands.py, command cv-t).
data {
  int<lower=1> N;
  vector[N] y;
}
parameters {
  real mu;
}
model {
  mu ~ normal(0, 5);
  y ~ student_t(3, mu, 1);
}
generated quantities {
  vector[N] log_lik;
  for (n in 1:N) {
    log_lik[n] = student_t_lpdf(y[n] | 3, mu, 1);
  }
}
