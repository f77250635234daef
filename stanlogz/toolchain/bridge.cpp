// stanlogz bridge: the BridgeStan C ABI plus stanlogz's own batched and NUTS entry points.
//
// This translation unit is model-independent: it works through stan::model::model_base and
// calls the stanc-generated factory `new_model`, which lives in the model's own object file.
// It is compiled once per toolchain/flags and linked into every model library.
#include <stan/model/model_header.hpp>
#include <stan/io/empty_var_context.hpp>
#include <stan/io/json/json_data.hpp>
#include <stan/model/log_prob_grad.hpp>
#include <stan/model/log_prob_propto.hpp>
#include <stan/services/sample/hmc_nuts_diag_e_adapt.hpp>
#include <stan/services/util/create_rng.hpp>
#include <stan/services/util/create_unit_e_diag_inv_metric.hpp>
#include <stan/services/util/initialize.hpp>
#include <stan/version.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef STANLOGZ_BS_MAJOR
#define STANLOGZ_BS_MAJOR 2
#endif
#ifndef STANLOGZ_BS_MINOR
#define STANLOGZ_BS_MINOR 9
#endif
#ifndef STANLOGZ_BS_PATCH
#define STANLOGZ_BS_PATCH 0
#endif

#define SLZ_EXPORT extern "C" __attribute__((visibility("default")))

// Defined by the stanc-generated code of each model.
stan::model::model_base& new_model(stan::io::var_context& data_context, unsigned int seed,
                                   std::ostream* msg_stream);

namespace {

// Print callback from the Python side (BridgeStan's bs_set_print_callback).
using print_cb_t = void (*)(const char*, int);
print_cb_t g_print_cb = nullptr;

class callback_buf : public std::streambuf {
 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (g_print_cb)
      g_print_cb(s, static_cast<int>(n));
    return n;
  }
  int overflow(int c) override {
    if (c != EOF && g_print_cb) {
      char ch = static_cast<char>(c);
      g_print_cb(&ch, 1);
    }
    return c;
  }
};
callback_buf g_cb_buf;
std::ostream g_cb_stream(&g_cb_buf);

std::ostream* print_stream() { return g_print_cb ? &g_cb_stream : &std::cout; }

// Each calling thread needs its own autodiff tape (STAN_THREADS makes it thread-local). Every
// entry that runs model code sets it up, not only the gradients: code evaluated in doubles
// can use autodiff inside (the ODE solvers' Jacobians, e.g. integrate_ode_bdf), and a thread
// without a tape crashes there (a log density of an ODE program in a worker thread segfaulted).
inline void ensure_ad_stack() {
  static thread_local stan::math::ChainableStack thread_instance;
  (void)thread_instance;
}

char* dup_msg(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p)
    std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

void set_err(char** err, const std::string& msg) {
  if (err)
    *err = dup_msg(msg);
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i)
      out += ',';
    out += v[i];
  }
  return out;
}

}  // namespace

struct bs_model {
  stan::model::model_base* model;
  std::string name;
  std::string info;
  std::string names[2][2];  // [include_tp][include_gq]
  std::string unc_names;
  int num[2][2];
  int unc_num;
  ~bs_model() { delete model; }
};

struct bs_rng {
  stan::rng_t rng;
  explicit bs_rng(unsigned int seed) : rng(stan::services::util::create_rng(seed, 0)) {}
};

namespace {

std::unique_ptr<stan::json::json_data> parse_json(const char* json) {
  std::string text = json ? json : "";
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    text = "{}";
  std::istringstream in(text);
  return std::make_unique<stan::json::json_data>(in);
}

template <bool propto, bool jacobian>
double log_density_t(const bs_model* m, Eigen::VectorXd& x) {
  ensure_ad_stack();
  if constexpr (propto) {
    return stan::model::log_prob_propto<jacobian>(*m->model, x, print_stream());
  } else {
    return m->model->template log_prob<false, jacobian>(x, print_stream());
  }
}

double log_density_any(const bs_model* m, bool propto, bool jacobian, Eigen::VectorXd& x) {
  if (propto)
    return jacobian ? log_density_t<true, true>(m, x) : log_density_t<true, false>(m, x);
  return jacobian ? log_density_t<false, true>(m, x) : log_density_t<false, false>(m, x);
}

double gradient_any(const bs_model* m, bool propto, bool jacobian, Eigen::VectorXd& x,
                    Eigen::VectorXd& g) {
  ensure_ad_stack();
  std::ostream* o = print_stream();
  if (propto)
    return jacobian ? stan::model::log_prob_grad<true, true>(*m->model, x, g, o)
                    : stan::model::log_prob_grad<true, false>(*m->model, x, g, o);
  return jacobian ? stan::model::log_prob_grad<false, true>(*m->model, x, g, o)
                  : stan::model::log_prob_grad<false, false>(*m->model, x, g, o);
}

// Hessian by central differences of the autodiff gradient (error ~ h^2, h ~ eps^(1/3)).
double hessian_any(const bs_model* m, bool propto, bool jacobian, Eigen::VectorXd& x,
                   Eigen::VectorXd& g, Eigen::MatrixXd& H) {
  const int n = x.size();
  double lp = gradient_any(m, propto, jacobian, x, g);
  Eigen::VectorXd gp(n), gm(n);
  for (int i = 0; i < n; ++i) {
    double h = 6.0e-6 * std::max(1.0, std::fabs(x[i]));
    Eigen::VectorXd xp = x, xm = x;
    xp[i] += h;
    xm[i] -= h;
    gradient_any(m, propto, jacobian, xp, gp);
    gradient_any(m, propto, jacobian, xm, gm);
    H.col(i) = (gp - gm) / (2.0 * h);
  }
  H = 0.5 * (H + H.transpose()).eval();
  return lp;
}

}  // namespace

// ---------------------------------------------------------------- BridgeStan C ABI

SLZ_EXPORT int bs_major_version = STANLOGZ_BS_MAJOR;
SLZ_EXPORT int bs_minor_version = STANLOGZ_BS_MINOR;
SLZ_EXPORT int bs_patch_version = STANLOGZ_BS_PATCH;

SLZ_EXPORT bs_model* bs_model_construct(const char* data, unsigned int seed, char** err) {
  try {
    auto ctx = parse_json(data);
    std::ostringstream msgs;
    auto* m = new bs_model();
    ensure_ad_stack();  // transformed data may call an ODE solver
    try {
      m->model = &new_model(*ctx, seed, &msgs);
    } catch (...) {
      m->model = nullptr;
      delete m;
      throw;
    }
    m->name = m->model->model_name();
    m->info = "stanlogz model library; Stan " + std::to_string(STAN_MAJOR) + "."
              + std::to_string(STAN_MINOR) + "." + std::to_string(STAN_PATCH)
              + "; STAN_THREADS; hessian by finite differences of gradients";
    for (int tp = 0; tp < 2; ++tp)
      for (int gq = 0; gq < 2; ++gq) {
        std::vector<std::string> v;
        m->model->constrained_param_names(v, tp, gq);
        m->names[tp][gq] = join(v);
        m->num[tp][gq] = static_cast<int>(v.size());
      }
    std::vector<std::string> u;
    m->model->unconstrained_param_names(u, false, false);
    m->unc_names = join(u);
    m->unc_num = static_cast<int>(m->model->num_params_r());
    return m;
  } catch (const std::exception& e) {
    set_err(err, e.what());
  } catch (...) {
    set_err(err, "unknown error constructing the model");
  }
  return nullptr;
}

SLZ_EXPORT void bs_model_destruct(bs_model* m) { delete m; }

SLZ_EXPORT void bs_free_error_msg(char* msg) { std::free(msg); }

SLZ_EXPORT void bs_set_print_callback(print_cb_t cb, char** err) { g_print_cb = cb; }

SLZ_EXPORT const char* bs_name(const bs_model* m) { return m->name.c_str(); }

SLZ_EXPORT const char* bs_model_info(const bs_model* m) { return m->info.c_str(); }

SLZ_EXPORT const char* bs_param_names(const bs_model* m, bool include_tp, bool include_gq) {
  return m->names[include_tp][include_gq].c_str();
}

SLZ_EXPORT const char* bs_param_unc_names(const bs_model* m) { return m->unc_names.c_str(); }

SLZ_EXPORT int bs_param_num(const bs_model* m, bool include_tp, bool include_gq) {
  return m->num[include_tp][include_gq];
}

SLZ_EXPORT int bs_param_unc_num(const bs_model* m) { return m->unc_num; }

SLZ_EXPORT int bs_param_constrain(const bs_model* m, bool include_tp, bool include_gq,
                                  const double* theta_unc, double* theta, bs_rng* rng,
                                  char** err) {
  try {
    if (include_gq && rng == nullptr) {
      set_err(err, "an RNG is required when including generated quantities");
      return -1;
    }
    Eigen::VectorXd x = Eigen::Map<const Eigen::VectorXd>(theta_unc, m->unc_num);
    Eigen::VectorXd out;
    ensure_ad_stack();
    if (rng) {
      m->model->write_array(rng->rng, x, out, include_tp, include_gq, print_stream());
    } else {
      stan::rng_t dummy = stan::services::util::create_rng(0, 0);
      m->model->write_array(dummy, x, out, include_tp, include_gq, print_stream());
    }
    std::memcpy(theta, out.data(), sizeof(double) * out.size());
    return 0;
  } catch (const std::exception& e) {
    set_err(err, e.what());
  } catch (...) {
    set_err(err, "unknown error in param_constrain");
  }
  return -1;
}

SLZ_EXPORT int bs_param_unconstrain(const bs_model* m, const double* theta, double* theta_unc,
                                    char** err) {
  try {
    Eigen::VectorXd c = Eigen::Map<const Eigen::VectorXd>(theta, m->num[0][0]);
    Eigen::VectorXd u(m->unc_num);
    ensure_ad_stack();
    m->model->unconstrain_array(c, u, print_stream());
    std::memcpy(theta_unc, u.data(), sizeof(double) * u.size());
    return 0;
  } catch (const std::exception& e) {
    set_err(err, e.what());
  } catch (...) {
    set_err(err, "unknown error in param_unconstrain");
  }
  return -1;
}

SLZ_EXPORT int bs_param_unconstrain_json(const bs_model* m, const char* json,
                                         double* theta_unc, char** err) {
  try {
    auto ctx = parse_json(json);
    Eigen::VectorXd u(m->unc_num);
    ensure_ad_stack();
    m->model->transform_inits(*ctx, u, print_stream());
    std::memcpy(theta_unc, u.data(), sizeof(double) * u.size());
    return 0;
  } catch (const std::exception& e) {
    set_err(err, e.what());
  } catch (...) {
    set_err(err, "unknown error in param_unconstrain_json");
  }
  return -1;
}

namespace {
class capture_logger : public stan::callbacks::logger {
 public:
  std::mutex mu;
  std::vector<std::string> errors;
  std::vector<std::string> infos;
  void info(const std::string& s) override { add(infos, s); }
  void info(const std::stringstream& s) override { add(infos, s.str()); }
  void warn(const std::string& s) override { add(infos, s); }
  void warn(const std::stringstream& s) override { add(infos, s.str()); }
  void error(const std::string& s) override { add(errors, s); }
  void error(const std::stringstream& s) override { add(errors, s.str()); }
  void fatal(const std::string& s) override { add(errors, s); }
  void fatal(const std::stringstream& s) override { add(errors, s.str()); }
  std::string summary() {
    std::lock_guard<std::mutex> lock(mu);
    std::string out;
    for (const auto* v : {&errors, &infos})
      for (const auto& s : *v) {
        if (s.find_first_not_of(" \t\n") == std::string::npos)
          continue;
        if (!out.empty())
          out += " | ";
        out += s;
      }
    return out;
  }

 private:
  void add(std::vector<std::string>& v, const std::string& s) {
    std::lock_guard<std::mutex> lock(mu);
    if (v.size() < 200)
      v.push_back(s);
  }
};
}  // namespace

SLZ_EXPORT int bs_param_initialize(const bs_model* m, const char* json, bs_rng* rng,
                                   double init_radius, int max_tries, bool jacobian,
                                   double* theta_unc, char** err) {
  // max_tries is fixed at Stan's 100 attempts by stan::services::util::initialize.
  capture_logger logger;
  try {
    ensure_ad_stack();
    auto ctx = parse_json(json);
    stan::callbacks::writer init_writer;
    std::vector<double> u
        = jacobian ? stan::services::util::initialize<true>(*m->model, *ctx, rng->rng,
                                                            init_radius, false, logger,
                                                            init_writer)
                   : stan::services::util::initialize<false>(*m->model, *ctx, rng->rng,
                                                             init_radius, false, logger,
                                                             init_writer);
    std::memcpy(theta_unc, u.data(), sizeof(double) * u.size());
    return 0;
  } catch (const std::exception& e) {
    set_err(err, std::string(e.what()) + " " + logger.summary());
  } catch (...) {
    set_err(err, "unknown error in param_initialize");
  }
  return -1;
}

SLZ_EXPORT int bs_log_density(const bs_model* m, bool propto, bool jacobian,
                              const double* theta_unc, double* val, char** err) {
  try {
    Eigen::VectorXd x = Eigen::Map<const Eigen::VectorXd>(theta_unc, m->unc_num);
    *val = log_density_any(m, propto, jacobian, x);
    return 0;
  } catch (const std::exception& e) {
    set_err(err, e.what());
  } catch (...) {
    set_err(err, "unknown error in log_density");
  }
  return -1;
}

SLZ_EXPORT int bs_log_density_gradient(const bs_model* m, bool propto, bool jacobian,
                                       const double* theta_unc, double* val, double* grad,
                                       char** err) {
  try {
    Eigen::VectorXd x = Eigen::Map<const Eigen::VectorXd>(theta_unc, m->unc_num);
    Eigen::VectorXd g(m->unc_num);
    *val = gradient_any(m, propto, jacobian, x, g);
    std::memcpy(grad, g.data(), sizeof(double) * g.size());
    return 0;
  } catch (const std::exception& e) {
    set_err(err, e.what());
  } catch (...) {
    set_err(err, "unknown error in log_density_gradient");
  }
  return -1;
}

SLZ_EXPORT int bs_log_density_hessian(const bs_model* m, bool propto, bool jacobian,
                                      const double* theta_unc, double* val, double* grad,
                                      double* hessian, char** err) {
  try {
    const int n = m->unc_num;
    Eigen::VectorXd x = Eigen::Map<const Eigen::VectorXd>(theta_unc, n);
    Eigen::VectorXd g(n);
    Eigen::MatrixXd H(n, n);
    *val = hessian_any(m, propto, jacobian, x, g, H);
    std::memcpy(grad, g.data(), sizeof(double) * n);
    std::memcpy(hessian, H.data(), sizeof(double) * n * n);
    return 0;
  } catch (const std::exception& e) {
    set_err(err, e.what());
  } catch (...) {
    set_err(err, "unknown error in log_density_hessian");
  }
  return -1;
}

SLZ_EXPORT int bs_log_density_hessian_vector_product(const bs_model* m, bool propto,
                                                     bool jacobian, const double* theta_unc,
                                                     const double* vector, double* val,
                                                     double* hvp, char** err) {
  try {
    const int n = m->unc_num;
    Eigen::VectorXd x = Eigen::Map<const Eigen::VectorXd>(theta_unc, n);
    Eigen::VectorXd v = Eigen::Map<const Eigen::VectorXd>(vector, n);
    Eigen::VectorXd g(n), gp(n), gm(n);
    *val = gradient_any(m, propto, jacobian, x, g);
    double scale = std::max(1.0, x.lpNorm<Eigen::Infinity>()) / std::max(1e-300, v.norm());
    double h = 6.0e-6 * scale;
    Eigen::VectorXd xp = x + h * v, xm = x - h * v;
    gradient_any(m, propto, jacobian, xp, gp);
    gradient_any(m, propto, jacobian, xm, gm);
    Eigen::VectorXd out = (gp - gm) / (2.0 * h);
    std::memcpy(hvp, out.data(), sizeof(double) * n);
    return 0;
  } catch (const std::exception& e) {
    set_err(err, e.what());
  } catch (...) {
    set_err(err, "unknown error in log_density_hessian_vector_product");
  }
  return -1;
}

SLZ_EXPORT bs_rng* bs_rng_construct(unsigned int seed, char** err) {
  try {
    return new bs_rng(seed);
  } catch (const std::exception& e) {
    set_err(err, e.what());
  }
  return nullptr;
}

SLZ_EXPORT void bs_rng_destruct(bs_rng* rng) { delete rng; }

// ---------------------------------------------------------------- stanlogz entry points

SLZ_EXPORT int slz_abi_version() { return 2; }

// Log density at n points (row-major n x dim). status[i]: 0 ok, 1 rejected (domain error,
// value -inf). Any other exception stops the loop and returns -1 with err set.
SLZ_EXPORT int slz_log_density_many(const bs_model* m, bool propto, bool jacobian, int n,
                                    const double* xs, double* out, int* status, char** err) {
  const int d = m->unc_num;
  for (int i = 0; i < n; ++i) {
    try {
      Eigen::VectorXd x = Eigen::Map<const Eigen::VectorXd>(xs + static_cast<size_t>(i) * d, d);
      out[i] = log_density_any(m, propto, jacobian, x);
      status[i] = 0;
    } catch (const std::domain_error& e) {
      out[i] = -std::numeric_limits<double>::infinity();
      status[i] = 1;
    } catch (const std::exception& e) {
      set_err(err, "point " + std::to_string(i) + ": " + e.what());
      return -1;
    }
  }
  return 0;
}

// Log density and gradient at n points; grads is row-major n x dim (NaN where rejected).
SLZ_EXPORT int slz_log_density_gradient_many(const bs_model* m, bool propto, bool jacobian,
                                             int n, const double* xs, double* out,
                                             double* grads, int* status, char** err) {
  const int d = m->unc_num;
  Eigen::VectorXd g(d);
  for (int i = 0; i < n; ++i) {
    const size_t off = static_cast<size_t>(i) * d;
    try {
      Eigen::VectorXd x = Eigen::Map<const Eigen::VectorXd>(xs + off, d);
      out[i] = gradient_any(m, propto, jacobian, x, g);
      std::memcpy(grads + off, g.data(), sizeof(double) * d);
      status[i] = 0;
    } catch (const std::domain_error& e) {
      out[i] = -std::numeric_limits<double>::infinity();
      for (int j = 0; j < d; ++j)
        grads[off + j] = std::numeric_limits<double>::quiet_NaN();
      status[i] = 1;
    } catch (const std::exception& e) {
      set_err(err, "point " + std::to_string(i) + ": " + e.what());
      return -1;
    }
  }
  return 0;
}

// Constrained values (optionally with tp/gq) at n points; out is row-major n x param_num.
SLZ_EXPORT int slz_param_constrain_many(const bs_model* m, bool include_tp, bool include_gq,
                                        int n, const double* xs, unsigned int seed,
                                        double* out, char** err) {
  const int d = m->unc_num;
  const int k = m->num[include_tp][include_gq];
  stan::rng_t rng = stan::services::util::create_rng(seed, 0);
  Eigen::VectorXd c;
  ensure_ad_stack();
  for (int i = 0; i < n; ++i) {
    try {
      Eigen::VectorXd x = Eigen::Map<const Eigen::VectorXd>(xs + static_cast<size_t>(i) * d, d);
      m->model->write_array(rng, x, c, include_tp, include_gq, print_stream());
      std::memcpy(out + static_cast<size_t>(i) * k, c.data(), sizeof(double) * k);
    } catch (const std::exception& e) {
      set_err(err, "point " + std::to_string(i) + ": " + e.what());
      return -1;
    }
  }
  return 0;
}

namespace {

// Stores each row the sampler writes into a preallocated (rows x cols) block. With a counter,
// publishes the number of rows written so far (one per iteration) for another thread to read.
class block_writer : public stan::callbacks::writer {
 public:
  block_writer(double* out, size_t rows, size_t cols, size_t first_col,
               long long* counter = nullptr)
      : out_(out), rows_(rows), cols_(cols), first_(first_col), counter_(counter) {}
  void operator()(const std::vector<double>& state) override {
    if (row_ >= rows_ || state.size() < first_ + cols_)
      return;
    std::memcpy(out_ + row_ * cols_, state.data() + first_, sizeof(double) * cols_);
    ++row_;
    if (counter_)
      __atomic_store_n(counter_, static_cast<long long>(row_), __ATOMIC_RELAXED);
  }
  size_t rows_written() const { return row_; }

 private:
  double* out_;
  size_t rows_, cols_, first_;
  long long* counter_;
  size_t row_ = 0;
};

struct nuts_interrupted : std::runtime_error {
  nuts_interrupted() : std::runtime_error("interrupted") {}
};

// Stan calls this before every iteration of every chain; a set flag stops the chain there.
// The exception unwinds to the service's catch (std::exception), which returns an error code.
class flag_interrupt : public stan::callbacks::interrupt {
 public:
  explicit flag_interrupt(const int* flag) : flag_(flag) {}
  void operator()() override {
    if (requested())
      throw nuts_interrupted();
  }
  bool requested() const { return flag_ && __atomic_load_n(flag_, __ATOMIC_RELAXED) != 0; }

 private:
  const int* flag_;
};

class metric_capture : public stan::callbacks::structured_writer {
 public:
  double stepsize = std::numeric_limits<double>::quiet_NaN();
  Eigen::VectorXd inv_metric;
  void write(const std::string& key, double value) override {
    if (key == "stepsize")
      stepsize = value;
  }
  void write(const std::string& key, const Eigen::VectorXd& vec) override {
    if (key == "inv_metric")
      inv_metric = vec;
  }
};

}  // namespace

// Stan's NUTS with diagonal metric adaptation (CmdStan defaults), chains run in parallel.
// Warmup draws are always saved and thin is 1; the caller drops/thins.
// draws_out: chains x (warmup+draws) x (7 + param_num(tp, gq)) sampler params + constrained.
// unc_out:   chains x (warmup+draws) x dim unconstrained positions.
// init_jsons: NULL or chains entries, each NULL or a JSON object of constrained inits.
// iterations_out: NULL or chains counters, each set (atomically) to the iterations done so far.
// stop: NULL or a flag another thread may set to nonzero to stop all chains at their next
//   iteration (read atomically).
// Returns 0 ok, 1 initialization failed, 2 other failure, 3 stopped by the flag (err set).
// stepsize_in: the step size every chain starts from (<= 0: Stan's default, 1).
// inv_metric_in: NULL, or chains x dim diagonal inverse metrics the chains start from (a
//   warm-started run: Stan's adaptation windows still run, from these rather than the unit one).
// windows: NULL (CmdStan's 75, 50, 25), or Stan's init_buffer, term_buffer and window.
SLZ_EXPORT int slz_nuts_run(const bs_model* m, int chains, int warmup, int draws,
                            unsigned int seed, double adapt_delta, int max_treedepth,
                            double init_radius, const char** init_jsons, double stepsize_in,
                            const double* inv_metric_in, const int* windows,
                            double* draws_out, double* unc_out,
                            double* stepsize_out, double* inv_metric_out,
                            long long* iterations_out, const int* stop, char** err) {
  capture_logger logger;
  flag_interrupt interrupt(stop);
  try {
    ensure_ad_stack();
    const size_t d = m->unc_num;
    const size_t rows = static_cast<size_t>(warmup) + draws;
    const size_t cols = 7 + m->num[1][1];
    std::vector<std::unique_ptr<stan::io::var_context>> inits;
    for (int c = 0; c < chains; ++c) {
      if (init_jsons && init_jsons[c])
        inits.emplace_back(parse_json(init_jsons[c]));
      else
        inits.emplace_back(std::make_unique<stan::io::empty_var_context>());
    }
    std::vector<std::unique_ptr<stan::io::var_context>> metrics;
    for (int c = 0; c < chains; ++c) {
      if (inv_metric_in) {
        std::vector<std::string> names{"inv_metric"};
        std::vector<double> vals(inv_metric_in + c * d, inv_metric_in + (c + 1) * d);
        std::vector<std::vector<size_t>> dims{{d}};
        metrics.emplace_back(std::make_unique<stan::io::array_var_context>(names, vals, dims));
      } else {
        metrics.emplace_back(std::make_unique<stan::io::array_var_context>(
            stan::services::util::create_unit_e_diag_inv_metric(d)));
      }
    }
    const double stepsize = stepsize_in > 0 ? stepsize_in : 1.0;
    const unsigned int init_buffer = windows ? windows[0] : 75;
    const unsigned int term_buffer = windows ? windows[1] : 50;
    const unsigned int window = windows ? windows[2] : 25;
    std::vector<stan::callbacks::writer> init_writers(chains);
    std::vector<block_writer> sample_writers, diag_writers;
    for (int c = 0; c < chains; ++c) {
      sample_writers.emplace_back(draws_out + c * rows * cols, rows, cols, 0,
                                  iterations_out ? iterations_out + c : nullptr);
      diag_writers.emplace_back(unc_out + c * rows * d, rows, d, 7);
    }
    std::vector<metric_capture> metric_writers(chains);
    stan::model::model_base& model = *m->model;
    int rc = stan::services::sample::hmc_nuts_diag_e_adapt(
        model, chains, inits, metrics, seed, 1, init_radius, warmup, draws, 1, true, 0, stepsize,
        0.0, max_treedepth, adapt_delta, 0.05, 0.75, 10.0, init_buffer, term_buffer, window,
        interrupt, logger,
        init_writers, sample_writers, diag_writers, metric_writers);
    std::string summary = logger.summary();
    if (rc != 0 && interrupt.requested()) {
      set_err(err, "interrupted");
      return 3;
    }
    if (rc != 0) {
      bool init_failed = summary.find("Initialization") != std::string::npos
                         || summary.find("initializ") != std::string::npos;
      set_err(err, summary.empty() ? "sampler failed" : summary);
      return init_failed ? 1 : 2;
    }
    for (int c = 0; c < chains; ++c) {
      if (sample_writers[c].rows_written() != rows || diag_writers[c].rows_written() != rows) {
        set_err(err, "chain " + std::to_string(c + 1) + " stopped early: " + summary);
        return 2;
      }
      stepsize_out[c] = metric_writers[c].stepsize;
      for (size_t j = 0; j < d; ++j)
        inv_metric_out[c * d + j] = static_cast<size_t>(metric_writers[c].inv_metric.size()) == d
                                        ? metric_writers[c].inv_metric[j]
                                        : std::numeric_limits<double>::quiet_NaN();
    }
    return 0;
  } catch (const nuts_interrupted&) {
    set_err(err, "interrupted");
    return 3;
  } catch (const std::exception& e) {
    set_err(err, std::string(e.what()) + " " + logger.summary());
  } catch (...) {
    set_err(err, "unknown error in NUTS");
  }
  return 2;
}

// slz_nuts_run from Stan's default step size and the unit metric (the ABI of stanlogz 2).
SLZ_EXPORT int slz_nuts_ctl(const bs_model* m, int chains, int warmup, int draws,
                            unsigned int seed, double adapt_delta, int max_treedepth,
                            double init_radius, const char** init_jsons, double* draws_out,
                            double* unc_out, double* stepsize_out, double* inv_metric_out,
                            long long* iterations_out, const int* stop, char** err) {
  return slz_nuts_run(m, chains, warmup, draws, seed, adapt_delta, max_treedepth, init_radius,
                      init_jsons, 0.0, nullptr, nullptr, draws_out, unc_out, stepsize_out,
                      inv_metric_out, iterations_out, stop, err);
}

// slz_nuts_ctl without progress counters or a stop flag (the ABI of stanlogz 1).
SLZ_EXPORT int slz_nuts(const bs_model* m, int chains, int warmup, int draws, unsigned int seed,
                        double adapt_delta, int max_treedepth, double init_radius,
                        const char** init_jsons, double* draws_out, double* unc_out,
                        double* stepsize_out, double* inv_metric_out, char** err) {
  return slz_nuts_ctl(m, chains, warmup, draws, seed, adapt_delta, max_treedepth, init_radius,
                      init_jsons, draws_out, unc_out, stepsize_out, inv_metric_out, nullptr,
                      nullptr, err);
}
