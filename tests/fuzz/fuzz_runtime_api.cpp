// libFuzzer target: bytes -> a sequence of calls of the runtime API as a hostile program makes
// them: tensors of two contexts mixed, scopes on the heap closed and destroyed in any order,
// checkpoints (both kinds, nested) whose functions throw, take another path, return another
// shape or leave a scope open when they run again, backward from any tensor with gradients of
// any shape, marks of any age, saved graphs, weights replaced, modules and the context destroyed
// in any order, NaN and empty batches. Every call must either work or throw one of the types the
// runtime documents (runtime/README.md, "Errors"); anything else, a crash or a sanitizer report
// is a finding. After the program, the context must still work: once its scopes are left, the
// step ends, and under fp8sm the next step makes one forward and one backward update.
//
//   scripts/fuzz.sh [INPUTS | --seconds N]    (runs this target after the scenario fuzzer)
//   FP8SM_FUZZ_TRACE=1 build-sanitize/tests/fuzz/fuzz_runtime_api crash-...   (a finding's calls)
#include <fmt/core.h>
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "runtime/fp8sm_runtime.hpp"

namespace {

namespace rt = fp8sm::runtime;

constexpr int kMaxCalls = 48;      // calls of the program
constexpr int kMaxBodyCalls = 6;   // calls of a checkpoint's function
constexpr int kMaxNesting = 3;     // checkpoints inside checkpoints
constexpr std::size_t kFeatures = 4;

// What a program's own code throws inside a checkpoint's function.
struct UserError : std::runtime_error {
  UserError() : std::runtime_error("the program's own error") {}
};

// FP8SM_FUZZ_TRACE=1 prints each call as it is made: to read a finding's input as a program.
template <class... Args>
void trace(fmt::format_string<Args...> format, Args&&... args) {
  static const bool on = std::getenv("FP8SM_FUZZ_TRACE") != nullptr;
  if (on) fmt::print(stderr, format, std::forward<Args>(args)...);
}

[[noreturn]] void fail(const std::string& what) {
  fmt::print(stderr, "fuzz_runtime_api: {}\n", what);
  std::abort();
}

// Runs `call`: it works, or throws a type the runtime documents.
template <class Call>
void documented(const char* what, Call&& call) {
  try {
    call();
  } catch (const rt::MisuseError&) {
  } catch (const rt::StateError&) {
  } catch (const rt::CheckpointError&) {
  } catch (const std::invalid_argument&) {
  } catch (const UserError&) {
  } catch (const std::exception& e) {
    fail(fmt::format("{}: an undocumented {}: {}", what, typeid(e).name(), e.what()));
  }
}

// A checkpoint's function: a slice of the input, interpreted again at every call (its
// recompute), and how it misbehaves from its second call on.
struct Body {
  std::vector<std::uint8_t> calls;
  enum class Twist : std::uint8_t { None, Throws, OtherShape, LeavesScopeOpen, ForeignOutput, Count } twist = Twist::None;
  int calls_so_far = 0;
};

class Program {
 public:
  explicit Program(FuzzedDataProvider& in) : in_(&in) {
    static constexpr fp8sm::spec::Semantics kSemantics[] = {fp8sm::spec::Semantics::Fp8sm,
                                                            fp8sm::spec::Semantics::Upstream,
                                                            fp8sm::spec::Semantics::Pr3213};
    semantics_ = kSemantics[in_->ConsumeIntegralInRange<int>(0, 2)];
    rt::Recipe recipe;
    recipe.amax_history_len = 4;
    recipe.reduce_amax = in_->ConsumeBool();
    context_ = std::make_unique<rt::Context>(recipe, rt::make_cpu_backend(), semantics_);
    other_ = std::make_unique<rt::Context>(recipe);
    for (int i = 0; i < 3; ++i) {
      linears_.push_back(std::make_unique<rt::Linear>(*context_, fmt::format("L{}", i), kFeatures, kFeatures, i + 1));
    }
    narrow_ = std::make_unique<rt::Linear>(*context_, "N", kFeatures, kFeatures - 1, 7);
    norm_ = std::make_unique<rt::LayerNorm>(*context_, "LN", kFeatures);
    norm_linear_ = std::make_unique<rt::LayerNormLinear>(*context_, "LNL", kFeatures, kFeatures, 9);
    foreign_linear_ = std::make_unique<rt::Linear>(*other_, "F", kFeatures, kFeatures, 11);
    pool_.push_back(context_->input(rt::Matrix(2, kFeatures, 0.5f)));
    foreign_.push_back(other_->input(rt::Matrix(2, kFeatures, 0.25f)));
  }

  ~Program() {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) delete_scope(*it);
  }

  void run() {
    for (int i = 0; i < kMaxCalls && in_->remaining_bytes() > 0; ++i) {
      documented("a call", [&] { call(pool_, 0); });
    }
    leave_everything();
  }

 private:
  struct Scope {
    rt::Autocast* autocast = nullptr;
    rt::NoGrad* no_grad = nullptr;
  };

  // One call of the API, reading from `in_` (a program's call, or one of a function's while it
  // is being built); `pool` holds the tensors it may read and gets what it writes.
  void call(std::vector<rt::Tensor>& pool, int nesting) {
    const int op = in_->ConsumeIntegralInRange<int>(0, 19);
    trace("call {} (nesting {}, autocast depth {}, {} scope objects)\n", op, nesting, context_->autocast_depth(),
          scopes_.size());
    switch (op) {
      case 0: pool.push_back(context_->input(value())); break;
      case 1: pool.push_back(context_->input(value())); break;
      case 2: forward(pool); break;
      case 3: forward(pool); break;
      case 4: forward(pool); break;
      case 5: open_scope(); break;
      case 6: close_scope(); break;
      case 7: destroy_scope(); break;
      case 8: if (nesting < kMaxNesting) checkpoint(pool, nesting); break;
      case 9: if (nesting < kMaxNesting) checkpoint(pool, nesting); break;
      case 10: backward(pool); break;
      case 11: backward(pool); break;
      case 12: marks_.push_back(context_->mark()); break;
      case 13: discard(); break;
      case 14: context_->save_graph(fmt::format("tape{}", in_->ConsumeIntegralInRange<int>(0, 2))); break;
      case 15: end_step(); break;
      case 16: (void)context_->gradient(pick(pool)); break;
      case 17: replace_parameter(); break;
      case 18: destroy_module(); break;
      case 19: context_->recompute_uncaptured(); break;
    }
  }

  rt::Matrix value() {
    const std::size_t rows = in_->ConsumeIntegralInRange<std::size_t>(0, 3);
    const std::size_t cols = in_->ConsumeBool() ? kFeatures : in_->ConsumeIntegralInRange<std::size_t>(0, 5);
    rt::Matrix m(rows, cols, 0.5f);
    if (!m.values.empty() && in_->ConsumeIntegralInRange<int>(0, 15) == 0) {
      m.values[0] = in_->ConsumeBool() ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
    }
    if (in_->ConsumeIntegralInRange<int>(0, 31) == 0) m.rows += 1;  // set by hand: ill-formed
    return m;
  }

  // A tensor of the pool, or now and then one of the other context, or one no context made.
  rt::Tensor pick(const std::vector<rt::Tensor>& pool) {
    switch (in_->ConsumeIntegralInRange<int>(0, 15)) {
      case 0: return foreign_.front();
      case 1: return rt::Tensor{rt::Matrix(2, kFeatures), 1, 0};
      default: return pool.empty() ? rt::Tensor{} : pool[in_->ConsumeIntegralInRange<std::size_t>(0, pool.size() - 1)];
    }
  }

  rt::Linear* linear() { return linears_[in_->ConsumeIntegralInRange<std::size_t>(0, linears_.size() - 1)].get(); }

  void forward(std::vector<rt::Tensor>& pool) {
    const rt::Tensor x = pick(pool);
    const int which = in_->ConsumeIntegralInRange<int>(0, 9);
    trace("  op {} of tensor #{} (context {}), {} x {}\n", which, x.id, x.context, x.value.rows, x.value.cols);
    switch (which) {
      case 0: pool.push_back(rt::relu(*context_, x)); break;
      case 1: pool.push_back(rt::gelu(*context_, x)); break;
      case 2: pool.push_back(rt::add(*context_, x, pick(pool))); break;
      case 3: if (norm_) pool.push_back(norm_->forward(x)); break;
      case 4: if (norm_linear_) pool.push_back(norm_linear_->forward(x)); break;
      case 5: pool.push_back(foreign_linear_->forward(x)); break;
      case 6: pool.push_back(narrow_->forward(x)); break;
      case 7: (void)rt::relu(*context_, x.value); break;  // the chain: a Matrix, read from its end
      default:
        if (rt::Linear* l = linear()) pool.push_back(l->forward(x));
        break;
    }
  }

  void open_scope() {
    Scope s;
    if (in_->ConsumeBool()) {
      s.autocast = new rt::Autocast(*context_, in_->ConsumeIntegralInRange<int>(0, 3) != 0);
    } else {
      s.no_grad = new rt::NoGrad(*context_);
    }
    scopes_.push_back(s);
  }

  // close() of any open scope object: out of order is a MisuseError that changes nothing.
  void close_scope() {
    if (scopes_.empty()) return;
    Scope& s = scopes_[in_->ConsumeIntegralInRange<std::size_t>(0, scopes_.size() - 1)];
    if (s.autocast) s.autocast->close();
    if (s.no_grad) s.no_grad->close();
  }

  // A scope object destroyed, in any order (a destructor throws nothing the program can see).
  void destroy_scope() {
    if (scopes_.empty()) return;
    const std::size_t k = in_->ConsumeIntegralInRange<std::size_t>(0, scopes_.size() - 1);
    const Scope s = scopes_[k];
    scopes_.erase(scopes_.begin() + static_cast<std::ptrdiff_t>(k));
    delete_scope(s);
  }

  static void delete_scope(const Scope& s) {
    // The destructors are noexcept(false): what an exit throws comes out of delete.
    documented("a scope's destructor", [&] {
      delete s.autocast;
      delete s.no_grad;
    });
  }

  void checkpoint(std::vector<rt::Tensor>& pool, int nesting) {
    auto body = std::make_shared<Body>();
    body->calls = in_->ConsumeBytes<std::uint8_t>(in_->ConsumeIntegralInRange<std::size_t>(0, 24));
    body->twist = static_cast<Body::Twist>(in_->ConsumeIntegralInRange<int>(0, static_cast<int>(Body::Twist::Count) - 1));
    const auto mode = in_->ConsumeBool() ? rt::CheckpointMode::Reentrant : rt::CheckpointMode::NonReentrant;
    std::vector<rt::Tensor> inputs = {pick(pool)};
    if (in_->ConsumeBool()) inputs.push_back(pick(pool));
    trace("  {} checkpoint of tensor #{}: {} bytes of calls, twist {}\n",
          mode == rt::CheckpointMode::Reentrant ? "reentrant" : "non-reentrant", inputs[0].id, body->calls.size(),
          static_cast<int>(body->twist));
    // The function keeps the program alive only as long as the context: the context's graph
    // holds it, and the program outlives the context.
    auto function = [this, body, nesting](const std::vector<rt::Tensor>& in) { return run_body(*body, in, nesting); };
    pool.push_back(rt::checkpoint(*context_, mode, function, inputs));
  }

  // A checkpoint's function: its calls again from its bytes, with its inputs as its pool.
  rt::Tensor run_body(Body& body, const std::vector<rt::Tensor>& in, int nesting) {
    const bool again = ++body.calls_so_far > 1;
    FuzzedDataProvider calls(body.calls.data(), body.calls.size());
    FuzzedDataProvider* const outer = in_swap(&calls);
    std::vector<rt::Tensor> pool = in;
    try {
      for (int i = 0; i < kMaxBodyCalls && calls.remaining_bytes() > 0; ++i) call(pool, nesting + 1);
    } catch (...) {
      in_swap(outer);
      throw;
    }
    in_swap(outer);
    rt::Tensor out = pool.back();
    trace("  the function returns tensor #{}{}\n", out.id, again ? " (a recompute)" : "");
    if (!again) return out;
    switch (body.twist) {
      case Body::Twist::Throws: throw UserError();
      case Body::Twist::OtherShape: return narrow_->forward(out);
      case Body::Twist::LeavesScopeOpen: scopes_.push_back(Scope{new rt::Autocast(*context_, false), nullptr}); break;
      case Body::Twist::ForeignOutput: return foreign_.front();
      default: break;
    }
    return out;
  }

  // Which bytes call() reads: the program's, or a function's while it runs.
  FuzzedDataProvider* in_swap(FuzzedDataProvider* next) {
    FuzzedDataProvider* previous = in_;
    in_ = next;
    return previous;
  }

  void backward(const std::vector<rt::Tensor>& pool) {
    const bool retain = in_->ConsumeBool();
    switch (in_->ConsumeIntegralInRange<int>(0, 3)) {
      case 0: (void)context_->backward(value(), retain); break;  // the chain's
      case 1: (void)context_->backward(fmt::format("tape{}", in_->ConsumeIntegralInRange<int>(0, 2)), value(), retain); break;
      default: {
        const rt::Tensor loss = pick(pool);
        trace("  backward from tensor #{}{}\n", loss.id, retain ? ", retain" : "");
        rt::Matrix gradient = in_->ConsumeBool() ? rt::Matrix(loss.value.rows, loss.value.cols, 1.0f) : value();
        context_->backward(loss, gradient, retain);
        break;
      }
    }
  }

  void discard() {
    if (marks_.empty() || in_->ConsumeIntegralInRange<int>(0, 7) == 0) {
      context_->discard_since(in_->ConsumeBool() ? rt::Context::TapeMark{} : other_->mark());
      return;
    }
    context_->discard_since(marks_[in_->ConsumeIntegralInRange<std::size_t>(0, marks_.size() - 1)]);
  }

  void end_step() { (void)context_->end_step(); }

  void replace_parameter() {
    rt::Linear* l = linear();
    if (l == nullptr) return;
    const std::size_t rows = in_->ConsumeIntegralInRange<std::size_t>(0, 5);
    (in_->ConsumeBool() ? l->weight() : l->weight_grad()) = rt::Matrix(rows, kFeatures, 0.1f);
  }

  void destroy_module() {
    switch (in_->ConsumeIntegralInRange<int>(0, 2)) {
      case 0: norm_.reset(); break;
      case 1: norm_linear_.reset(); break;
      default: {
        const std::size_t k = in_->ConsumeIntegralInRange<std::size_t>(0, linears_.size() - 1);
        if (linears_.size() > 1) linears_.erase(linears_.begin() + static_cast<std::ptrdiff_t>(k));
        break;
      }
    }
  }

  // Every scope left (close(), innermost first, as a program that unwinds would), the step
  // ended, and a clean step with fresh modules; then everything destroyed in an order of the
  // input's choosing.
  void leave_everything() {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      documented("leaving a scope at the end", [&] {
        if (it->autocast) it->autocast->close();
        if (it->no_grad) it->no_grad->close();
      });
    }
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) delete_scope(*it);
    scopes_.clear();
    if (context_->autocast_depth() != 0 || !context_->grad_enabled()) {
      fail(fmt::format("every scope was left, but the autocast depth is {} and grad is {}", context_->autocast_depth(),
                       context_->grad_enabled() ? "on" : "off"));
    }
    try {
      context_->end_step();
    } catch (const std::exception& e) {
      fail(fmt::format("end_step after every scope was left: {}", e.what()));
    }
    if (semantics_ == fp8sm::spec::Semantics::Fp8sm) clean_step();
    if (in_->ConsumeBool()) context_.reset();  // before the modules and tensors that name it
  }

  void clean_step() {
    try {
      rt::Linear a(*context_, "clean0", kFeatures, kFeatures, 21), b(*context_, "clean1", kFeatures, 2, 22);
      const rt::Tensor x = context_->input(rt::Matrix(2, kFeatures, 0.5f));
      rt::Tensor y;
      {
        rt::Autocast fp8(*context_);
        y = b.forward(rt::relu(*context_, a.forward(x)));
      }
      context_->backward(y, rt::Matrix(2, 2, 1.0f));
      const rt::StepCounts counts = context_->end_step();
      if (counts.forward_updates != 1 || counts.backward_updates != 1) {
        fail(fmt::format("the clean step after the program made {}/{} updates", counts.forward_updates,
                         counts.backward_updates));
      }
    } catch (const std::exception& e) {
      fail(fmt::format("the clean step after the program threw: {}", e.what()));
    }
  }

  FuzzedDataProvider* in_;  // the program's bytes, or a function's while it runs (in_swap)
  fp8sm::spec::Semantics semantics_ = fp8sm::spec::Semantics::Fp8sm;
  std::unique_ptr<rt::Context> context_, other_;
  std::vector<std::unique_ptr<rt::Linear>> linears_;
  std::unique_ptr<rt::Linear> narrow_, foreign_linear_;
  std::unique_ptr<rt::LayerNorm> norm_;
  std::unique_ptr<rt::LayerNormLinear> norm_linear_;
  std::vector<rt::Tensor> pool_, foreign_;
  std::vector<rt::Context::TapeMark> marks_;
  std::vector<Scope> scopes_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  Program program(in);
  program.run();
  return 0;
}
