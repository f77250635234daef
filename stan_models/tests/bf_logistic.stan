// One-coefficient logistic regression with a student-t prior: every Bayes-factor quantity is a
// 1-D integral (benchmarks/truths/bayes_factors/truths.py computes them by quadrature).
data {
  int<lower=0> N;
  vector[N] x;
  array[N] int<lower=0, upper=1> y;
}
parameters {
  real beta;
}
model {
  beta ~ student_t(3, 0, 2.5);
  y ~ bernoulli_logit(beta * x);
}
