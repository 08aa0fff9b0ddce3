// The Clang checks of a kernel body (body_check.h). The body is parsed into an AST
// with libTooling (buildASTFromCodeWithArgs) as OpenCL C 1.2 with Clang's default
// OpenCL header; Clang's errors become `syntax` problems. Then one walk over every
// function the body defines collects, per pointer variable, the kernel parameters
// it may point into (its origins), the stores, the reads, the calls and the features;
// the rules are judged on that.
#include "frontend/body_check.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/Diagnostic.h>
#include <clang/Frontend/ASTUnit.h>
#include <clang/Tooling/Tooling.h>

#include <map>
#include <set>

namespace ks::frontend {

namespace {

using Origins = std::set<const clang::ParmVarDecl *>;  // parameters of __kernel functions

// Clang's diagnostics, kept where they are the body's (not the OpenCL header's).
class Collector : public clang::DiagnosticConsumer {
 public:
  std::vector<BodyProblem> errors;
  void HandleDiagnostic(clang::DiagnosticsEngine::Level level, const clang::Diagnostic &info) override {
    DiagnosticConsumer::HandleDiagnostic(level, info);
    if (level < clang::DiagnosticsEngine::Error) return;
    llvm::SmallString<256> message;
    info.FormatDiagnostic(message);
    BodyProblem p{"syntax", 0, 0, std::string(message)};
    if (info.hasSourceManager() && info.getLocation().isValid()) {
      const clang::SourceManager &sm = info.getSourceManager();
      clang::SourceLocation loc = sm.getFileLoc(info.getLocation());
      if (sm.isWrittenInMainFile(loc)) {
        p.line = static_cast<int>(sm.getSpellingLineNumber(loc));
        p.column = static_cast<int>(sm.getSpellingColumnNumber(loc));
      }
    }
    if (errors.size() < 20) errors.push_back(p);  // the first ones say it; Clang stops at 20 too
  }
};

const clang::Expr *bare(const clang::Expr *e) { return e ? e->IgnoreParenCasts() : nullptr; }

std::string callee_name(const clang::CallExpr *call) {
  if (const clang::FunctionDecl *f = call->getDirectCallee()) return f->getNameAsString();
  return "";
}

// The width N of vloadN / vstoreN / vload_halfN names; 0 for other names.
int vector_call_width(const std::string &name) {
  for (const char *prefix : {"vload", "vstore"}) {
    if (name.rfind(prefix, 0) != 0) continue;
    std::string rest = name.substr(std::char_traits<char>::length(prefix));
    if (rest.rfind("_half", 0) == 0) rest = rest.substr(5);
    if (rest.rfind("a_half", 0) == 0) rest = rest.substr(6);
    if (!rest.empty() && std::isdigit(static_cast<unsigned char>(rest[0]))) return std::atoi(rest.c_str());
    return 1;
  }
  return 0;
}

class Walker : public clang::RecursiveASTVisitor<Walker> {
 public:
  explicit Walker(clang::ASTContext &ctx) : ctx_(ctx), sm_(ctx.getSourceManager()) {}

  std::map<const clang::ValueDecl *, Origins> origins;
  // Pointer expressions stored through, read through, and the calls to the body's
  // own functions (an argument flows into the callee's parameter).
  std::vector<const clang::Expr *> stores, reads;
  std::vector<std::pair<const clang::Expr *, const clang::ParmVarDecl *>> flows;
  std::vector<std::pair<const clang::Expr *, const clang::ValueDecl *>> assigns;  // pointer = expr
  std::vector<BodyProblem> problems;
  std::vector<const clang::FunctionDecl *> kernels;
  BodyFeatures features;

  bool shouldVisitImplicitCode() const { return false; }

  bool TraverseDecl(clang::Decl *d) {
    // The OpenCL header's thousands of declarations are not the body's.
    if (d && !llvm::isa<clang::TranslationUnitDecl>(d) && d->getLocation().isValid() &&
        !sm_.isWrittenInMainFile(sm_.getFileLoc(d->getLocation())))
      return true;
    return RecursiveASTVisitor::TraverseDecl(d);
  }

  bool VisitFunctionDecl(clang::FunctionDecl *f) {
    if (!f->isThisDeclarationADefinition()) return true;
    if (f->hasAttr<clang::OpenCLKernelAttr>()) {
      kernels.push_back(f);
      ++features.kernels;
      for (const clang::ParmVarDecl *p : f->parameters()) origins[p].insert(p);
    }
    return true;
  }

  bool VisitVarDecl(clang::VarDecl *v) {
    clang::QualType t = v->getType();
    if (t.getAddressSpace() == clang::LangAS::opencl_local && !t->isDependentType() && !t->isIncompleteType())
      features.local_memory_bytes += ctx_.getTypeSizeInChars(t).getQuantity();
    note_vector(t);
    if (v->getInit() && (t->isPointerType() || t->isArrayType() || t->isRecordType()))
      assigns.emplace_back(v->getInit(), v);
    return true;
  }

  // Loops, for the depth.
  bool TraverseForStmt(clang::ForStmt *s) {
    return loop([&] { return RecursiveASTVisitor::TraverseForStmt(s); });
  }
  bool TraverseWhileStmt(clang::WhileStmt *s) {
    return loop([&] { return RecursiveASTVisitor::TraverseWhileStmt(s); });
  }
  bool TraverseDoStmt(clang::DoStmt *s) {
    return loop([&] { return RecursiveASTVisitor::TraverseDoStmt(s); });
  }

  bool VisitBinaryOperator(clang::BinaryOperator *op) {
    if (!op->isAssignmentOp()) return true;
    store_to(op->getLHS());
    if (op->isCompoundAssignmentOp()) read_of(op->getLHS());
    // A pointer stored into a variable, an array of pointers or a struct's field:
    // the variable then holds it.
    if (op->getLHS()->getType()->isPointerType())
      if (const clang::ValueDecl *root = root_of(op->getLHS())) assigns.emplace_back(op->getRHS(), root);
    return true;
  }

  // A pointer returned by the body's own function: its calls point where it does.
  bool VisitReturnStmt(clang::ReturnStmt *r) {
    if (function_ && r->getRetValue() && function_->getReturnType()->isPointerType())
      assigns.emplace_back(r->getRetValue(), function_);
    return true;
  }

  bool TraverseFunctionDecl(clang::FunctionDecl *f) {
    const clang::FunctionDecl *outer = function_;
    function_ = f;
    bool result = RecursiveASTVisitor::TraverseFunctionDecl(f);
    function_ = outer;
    return result;
  }

  // sizeof and alignof read nothing.
  bool TraverseUnaryExprOrTypeTraitExpr(clang::UnaryExprOrTypeTraitExpr *) { return true; }

  bool VisitUnaryOperator(clang::UnaryOperator *op) {
    if (op->isIncrementDecrementOp()) {
      store_to(op->getSubExpr());
      read_of(op->getSubExpr());
    }
    return true;
  }

  // Every subscript and dereference reads (a store's target is also counted as a
  // read: a body that only stores to an input is already refused for that).
  bool VisitArraySubscriptExpr(clang::ArraySubscriptExpr *e) {
    reads.push_back(e->getBase());
    return true;
  }

  bool VisitCastExpr(clang::CastExpr *e) {
    if (e->getCastKind() == clang::CK_IntegralToPointer && !llvm::isa<clang::ImplicitCastExpr>(e))
      problem(e->getBeginLoc(), "pointer-from-integer",
              "an integer is cast to a pointer; kernels reach memory only through the plan's buffers");
    note_vector(e->getType());
    return true;
  }

  bool VisitCallExpr(clang::CallExpr *call) {
    const std::string name = callee_name(call);
    if (name == "printf") problem(call->getBeginLoc(), "printf", "printf in a kernel body; remove it");
    if (name == "barrier" || name == "work_group_barrier") ++features.barriers;
    if (int width = vector_call_width(name)) {
      features.vector_width = std::max(features.vector_width, width);
      // vloadN(offset, p); vstoreN(data, offset, p)
      if (name.rfind("vload", 0) == 0 && call->getNumArgs() >= 2) reads.push_back(call->getArg(1));
      if (name.rfind("vstore", 0) == 0 && call->getNumArgs() >= 3) stores.push_back(call->getArg(2));
    }
    // async_work_group_copy(dst, src, n, event), and the strided one.
    if (name.rfind("async_work_group", 0) == 0 && call->getNumArgs() >= 2) {
      stores.push_back(call->getArg(0));
      reads.push_back(call->getArg(1));
    }
    if (name == "prefetch" && call->getNumArgs() >= 1) reads.push_back(call->getArg(0));
    if ((name.rfind("atomic_", 0) == 0 || name.rfind("atom_", 0) == 0) && call->getNumArgs() >= 1) {
      stores.push_back(call->getArg(0));
      reads.push_back(call->getArg(0));
    }
    const clang::FunctionDecl *f = call->getDirectCallee();
    if (f && f->getDefinition() && sm_.isWrittenInMainFile(sm_.getFileLoc(f->getDefinition()->getLocation()))) {
      const clang::FunctionDecl *def = f->getDefinition();
      for (unsigned i = 0; i < call->getNumArgs() && i < def->getNumParams(); ++i)
        if (def->getParamDecl(i)->getType()->isPointerType()) flows.emplace_back(call->getArg(i), def->getParamDecl(i));
    }
    return true;
  }

  // The declarations a pointer expression may be based on.
  std::set<const clang::ValueDecl *> bases(const clang::Expr *e) const {
    std::set<const clang::ValueDecl *> out;
    e = bare(e);
    if (!e) return out;
    if (auto *ref = llvm::dyn_cast<clang::DeclRefExpr>(e)) {
      out.insert(ref->getDecl());
    } else if (auto *list = llvm::dyn_cast<clang::InitListExpr>(e)) {
      for (const clang::Expr *item : list->inits()) {
        auto more = bases(item);
        out.insert(more.begin(), more.end());
      }
    } else if (auto *sub = llvm::dyn_cast<clang::ArraySubscriptExpr>(e)) {
      return bases(sub->getBase());  // ptrs[0], a pointer from an array of them
    } else if (auto *member = llvm::dyn_cast<clang::MemberExpr>(e)) {
      return bases(member->getBase());  // w.p
    } else if (auto *call = llvm::dyn_cast<clang::CallExpr>(e)) {
      if (const clang::FunctionDecl *f = call->getDirectCallee(); f && f->getDefinition())
        out.insert(f->getDefinition());  // what its returns point into
    } else if (auto *bin = llvm::dyn_cast<clang::BinaryOperator>(e)) {
      for (const clang::Expr *side : {bin->getLHS(), bin->getRHS()})
        if (side->getType()->isPointerType() || bin->getOpcode() == clang::BO_Comma) {
          auto more = bases(side);
          out.insert(more.begin(), more.end());
        }
    } else if (auto *cond = llvm::dyn_cast<clang::ConditionalOperator>(e)) {
      for (const clang::Expr *side : {cond->getTrueExpr(), cond->getFalseExpr()}) {
        auto more = bases(side);
        out.insert(more.begin(), more.end());
      }
    } else if (auto *un = llvm::dyn_cast<clang::UnaryOperator>(e)) {
      if (un->getOpcode() == clang::UO_AddrOf) {
        const clang::Expr *inner = bare(un->getSubExpr());
        if (auto *sub = llvm::dyn_cast<clang::ArraySubscriptExpr>(inner)) return bases(sub->getBase());
        if (auto *deref = llvm::dyn_cast<clang::UnaryOperator>(inner); deref && deref->getOpcode() == clang::UO_Deref)
          return bases(deref->getSubExpr());
        return bases(inner);  // &x: a pointer to the pointer x holds what x does
      } else if (un->getOpcode() == clang::UO_Deref) {
        return bases(un->getSubExpr());  // *pp, a pointer read through a pointer to it
      } else if (un->getOpcode() == clang::UO_PostInc || un->getOpcode() == clang::UO_PreInc ||
                 un->getOpcode() == clang::UO_PostDec || un->getOpcode() == clang::UO_PreDec) {
        return bases(un->getSubExpr());
      }
    }
    return out;
  }

  Origins origins_of(const clang::Expr *e) const {
    Origins out;
    for (const clang::ValueDecl *d : bases(e))
      if (auto it = origins.find(d); it != origins.end()) out.insert(it->second.begin(), it->second.end());
    return out;
  }

  // Spreads origins through assignments and calls until nothing changes.
  void propagate() {
    for (bool changed = true; changed;) {
      changed = false;
      auto spread = [&](const clang::Expr *from, const clang::ValueDecl *to) {
        Origins o = origins_of(from);
        Origins &into = origins[to];
        size_t before = into.size();
        into.insert(o.begin(), o.end());
        changed |= into.size() != before;
      };
      for (const auto &[from, to] : assigns) spread(from, to);
      for (const auto &[from, to] : flows) spread(from, to);
    }
  }

 private:
  clang::ASTContext &ctx_;
  const clang::SourceManager &sm_;
  int depth_ = 0;
  const clang::FunctionDecl *function_ = nullptr;  // the definition being walked

  // The variable an lvalue is part of: w in w.p, ptrs in ptrs[0], p in *p.
  static const clang::ValueDecl *root_of(const clang::Expr *e) {
    for (e = bare(e); e; e = bare(e)) {
      if (auto *ref = llvm::dyn_cast<clang::DeclRefExpr>(e)) return ref->getDecl();
      if (auto *m = llvm::dyn_cast<clang::MemberExpr>(e)) {
        e = m->getBase();
      } else if (auto *sub = llvm::dyn_cast<clang::ArraySubscriptExpr>(e)) {
        e = sub->getBase();
      } else if (auto *un = llvm::dyn_cast<clang::UnaryOperator>(e); un && un->getOpcode() == clang::UO_Deref) {
        e = un->getSubExpr();
      } else {
        return nullptr;
      }
    }
    return nullptr;
  }

  template <typename F>
  bool loop(F traverse) {
    features.max_loop_depth = std::max(features.max_loop_depth, ++depth_);
    bool result = traverse();
    --depth_;
    return result;
  }

  void note_vector(clang::QualType t) {
    if (t.isNull()) return;
    if (const auto *p = t->getAs<clang::PointerType>()) t = p->getPointeeType();
    while (const auto *a = llvm::dyn_cast<clang::ArrayType>(t.getTypePtr())) t = a->getElementType();
    if (const auto *v = t->getAs<clang::ExtVectorType>())
      features.vector_width = std::max(features.vector_width, static_cast<int>(v->getNumElements()));
  }

  // The pointer an lvalue stores through: p in p[i], *p, p[i].x.
  void store_to(const clang::Expr *lvalue) {
    const clang::Expr *e = bare(lvalue);
    while (true) {
      if (auto *m = llvm::dyn_cast<clang::ExtVectorElementExpr>(e)) {
        e = bare(m->getBase());
      } else if (auto *m = llvm::dyn_cast<clang::MemberExpr>(e)) {
        e = bare(m->getBase());
      } else {
        break;
      }
    }
    if (auto *sub = llvm::dyn_cast<clang::ArraySubscriptExpr>(e)) stores.push_back(sub->getBase());
    if (auto *un = llvm::dyn_cast<clang::UnaryOperator>(e); un && un->getOpcode() == clang::UO_Deref)
      stores.push_back(un->getSubExpr());
  }

  void read_of(const clang::Expr *lvalue) {
    const clang::Expr *e = bare(lvalue);
    if (auto *un = llvm::dyn_cast<clang::UnaryOperator>(e); un && un->getOpcode() == clang::UO_Deref)
      reads.push_back(un->getSubExpr());
  }

 public:
  void problem(clang::SourceLocation loc, const char *rule, const std::string &message) {
    BodyProblem p{rule, 0, 0, message};
    if (loc.isValid()) {
      loc = sm_.getFileLoc(loc);
      p.line = static_cast<int>(sm_.getSpellingLineNumber(loc));
      p.column = static_cast<int>(sm_.getSpellingColumnNumber(loc));
    }
    problems.push_back(p);
  }

  // Dereferences read too (*p as an rvalue); a plain walk for them.
  bool VisitImplicitCastExpr(clang::ImplicitCastExpr *e) {
    if (e->getCastKind() != clang::CK_LValueToRValue) return true;
    const clang::Expr *inner = bare(e->getSubExpr());
    if (auto *un = llvm::dyn_cast<clang::UnaryOperator>(inner); un && un->getOpcode() == clang::UO_Deref)
      reads.push_back(un->getSubExpr());
    return true;
  }
};

const char *type_name(DType t) {
  switch (t) {
    case DType::F32: return "float";
    case DType::I32: return "int";
    case DType::F16: return "half";     // read and written through vload_half/vstore_half_rte
    case DType::BF16: return "ushort";  // an f32's top 16 bits
    default: return "long";
  }
}

// Whether element (a builtin type, or a vector of one) holds values of type t.
bool holds(clang::QualType element, DType t) {
  if (const auto *v = element->getAs<clang::ExtVectorType>()) element = v->getElementType();
  const auto *b = element->getAs<clang::BuiltinType>();
  if (!b) return false;
  switch (t) {
    case DType::F32: return b->getKind() == clang::BuiltinType::Float;
    case DType::I32: return b->getKind() == clang::BuiltinType::Int || b->getKind() == clang::BuiltinType::UInt;
    case DType::I64: return b->getKind() == clang::BuiltinType::Long || b->getKind() == clang::BuiltinType::ULong;
    case DType::F16: return b->getKind() == clang::BuiltinType::Half;
    case DType::BF16: return b->getKind() == clang::BuiltinType::UShort || b->getKind() == clang::BuiltinType::Short;
    default: return false;
  }
}

// The `type` problem of a parameter for its argument, or "".
std::string parameter_mismatch(const clang::ASTContext &ctx, const clang::ParmVarDecl *p, const CheckedArg &arg) {
  clang::QualType t = p->getType();
  const std::string what = "parameter '" + p->getNameAsString() + "' (" + t.getAsString() + ")";
  if (arg.kind == CheckedArg::Kind::Size) {
    if (t->isIntegerType() && !t->isPointerType() && ctx.getTypeSize(t) == 32) return "";
    return what + " receives size " + arg.name + ", passed as a 32-bit int";
  }
  const char *role = arg.kind == CheckedArg::Kind::Input    ? "input"
                     : arg.kind == CheckedArg::Kind::Output ? "output"
                                                            : "scratch buffer";
  const std::string wanted = std::string("a __global ") + type_name(arg.type) + " pointer";
  const auto *pointer = t->getAs<clang::PointerType>();
  if (!pointer) return what + " receives " + role + " " + arg.name + "; it wants " + wanted;
  clang::QualType pointee = pointer->getPointeeType();
  clang::LangAS space = pointee.getAddressSpace();
  bool space_ok = space == clang::LangAS::opencl_global ||
                  (arg.kind == CheckedArg::Kind::Input && space == clang::LangAS::opencl_constant);
  if (!space_ok || !holds(pointee.getUnqualifiedType(), arg.type))
    return what + " receives " + role + " " + arg.name + " (" + dtype_name(arg.type) + "); it wants " + wanted +
           (arg.kind == CheckedArg::Kind::Input ? " (or __constant)" : "");
  return "";
}

}  // namespace

std::string BodyCheck::text(const std::string &label) const {
  std::string out;
  for (const BodyProblem &p : problems) {
    out += label;
    if (p.line) out += ":" + std::to_string(p.line) + ":" + std::to_string(p.column);
    out += ": [" + p.rule + "] " + p.message + "\n";
  }
  return out;
}

BodyCheck check_body(const std::string &source, const std::vector<CheckedLaunch> &launches,
                     const std::vector<std::string> &inputs,
                     const std::vector<std::pair<std::string, int64_t>> &defines) {
  BodyCheck result;
  std::vector<std::string> args = {"-xcl",
                                   "-cl-std=CL1.2",
                                   "-Xclang",
                                   "-finclude-default-header",
                                   "-resource-dir=" KS_CLANG_RESOURCE_DIR,
                                   "-fsyntax-only",
                                   "-Wno-everything",
                                   "-fno-caret-diagnostics"};  // and no "N errors generated" on stderr
  for (const auto &[name, value] : defines) args.push_back("-D" + name + "=" + std::to_string(value));
  Collector collector;
  std::unique_ptr<clang::ASTUnit> ast = clang::tooling::buildASTFromCodeWithArgs(
      source, args, "body.cl", "ksmith", std::make_shared<clang::PCHContainerOperations>(),
      clang::tooling::getClangStripDependencyFileAdjuster(), clang::tooling::FileContentMappings(), &collector);
  if (!ast) {
    result.problems.push_back({"syntax", 0, 0, "Clang could not parse the body"});
    return result;
  }
  if (!collector.errors.empty()) {
    result.problems = collector.errors;
    return result;
  }
  clang::ASTContext &ctx = ast->getASTContext();
  Walker walker(ctx);
  walker.TraverseDecl(ctx.getTranslationUnitDecl());
  walker.propagate();
  result.features = walker.features;
  result.problems = walker.problems;

  std::map<std::string, const clang::FunctionDecl *> kernels;
  for (const clang::FunctionDecl *k : walker.kernels) kernels[k->getNameAsString()] = k;
  // What each kernel parameter is stored through and read through.
  std::set<const clang::ParmVarDecl *> stored, read;
  for (const clang::Expr *e : walker.stores)
    for (const clang::ParmVarDecl *p : walker.origins_of(e)) stored.insert(p);
  for (const clang::Expr *e : walker.reads)
    for (const clang::ParmVarDecl *p : walker.origins_of(e)) read.insert(p);
  std::map<std::string, bool> written, seen;  // by tensor: stored by some launch; read by some launch
  std::map<std::string, const CheckedArg *> tensors;
  for (const CheckedLaunch &launch : launches) {
    auto found = kernels.find(launch.kernel);
    if (found == kernels.end()) {
      std::string names;
      for (const auto &[name, k] : kernels) names += (names.empty() ? "" : ", ") + name;
      result.problems.push_back({"kernel", 0, 0,
                                 "the plan launches '" + launch.kernel +
                                     "', which is not a __kernel function of the "
                                     "body (it defines " +
                                     (names.empty() ? std::string("none") : names) + ")"});
      continue;
    }
    const clang::FunctionDecl *k = found->second;
    auto at = [&](const clang::Decl *d, const char *rule, const std::string &message) {
      walker.problem(d->getLocation(), rule, message);
      result.problems.push_back(walker.problems.back());
    };
    if (k->getNumParams() != launch.args.size()) {
      at(k, "arity",
         "kernel " + launch.kernel + " has " + std::to_string(k->getNumParams()) + " parameters; its launch passes " +
             std::to_string(launch.args.size()) + " arguments");
      continue;
    }
    for (unsigned i = 0; i < k->getNumParams(); ++i) {
      const clang::ParmVarDecl *p = k->getParamDecl(i);
      const CheckedArg &arg = launch.args[i];
      if (std::string mismatch = parameter_mismatch(ctx, p, arg); !mismatch.empty()) {
        at(p, "type", "kernel " + launch.kernel + ": " + mismatch);
        continue;
      }
      if (arg.kind == CheckedArg::Kind::Size || arg.kind == CheckedArg::Kind::Scratch) continue;
      tensors[arg.name] = &arg;
      written[arg.name] = written[arg.name] || stored.count(p);
      seen[arg.name] = seen[arg.name] || read.count(p);
      if (arg.kind == CheckedArg::Kind::Input && stored.count(p))
        at(p, "input-written",
           "kernel " + launch.kernel + " stores to input " + arg.name + " (parameter '" + p->getNameAsString() +
               "'); inputs are only read");
    }
  }
  if (!result.problems.empty()) return result;  // the rules below assume the parameters fit
  for (const auto &[name, arg] : tensors) {
    if (arg->kind == CheckedArg::Kind::Output && !written[name])
      result.problems.push_back(
          {"output-not-written", 0, 0, "no kernel stores to output " + name + "; every output must be written"});
    if (arg->kind == CheckedArg::Kind::Input && !seen[name])
      result.problems.push_back({"input-unread", 0, 0, "no kernel reads input " + name});
  }
  for (const std::string &name : inputs)
    if (!tensors.count(name))
      result.problems.push_back({"input-unread", 0, 0, "input " + name + " is given to no kernel of the plan"});
  return result;
}

}  // namespace ks::frontend
