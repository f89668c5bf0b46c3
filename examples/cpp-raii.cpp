// A C++17 host with RAII wrappers: every handle is a std::unique_ptr with
// its library destructor, every failure is an exception carrying the
// CCSB_E_* code and the library's message, and nothing is leaked on any
// path. Runs two commands and one deliberately invalid spec.
//
// usage: cpp-raii [--backend none|native]   exit 0 when all checks pass
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <ccsandbox/ccsandbox.h>

namespace ccsb {

class Error : public std::runtime_error {
public:
    Error(int code, const std::string &what)
        : std::runtime_error(what + " (" + ccsb_strerror(code) + ")"), code_(code) {}
    int code() const noexcept { return code_; }

private:
    int code_;
};

template <typename T, void (*Free)(T *)>
struct Deleter {
    void operator()(T *p) const noexcept { Free(p); }
};

using CtxPtr = std::unique_ptr<ccsb_ctx, Deleter<ccsb_ctx, ccsb_ctx_free>>;
using SpecPtr = std::unique_ptr<ccsb_spec, Deleter<ccsb_spec, ccsb_spec_free>>;
using SessionPtr = std::unique_ptr<ccsb_session, Deleter<ccsb_session, ccsb_session_destroy>>;
using ReqPtr = std::unique_ptr<ccsb_exec_req, Deleter<ccsb_exec_req, ccsb_exec_req_free>>;
using EventPtr = std::unique_ptr<ccsb_event, Deleter<ccsb_event, ccsb_event_free>>;

inline void check(int r, const std::string &what)
{
    if (r < 0)
        throw Error(r, what);
}

class Spec {
public:
    Spec()
    {
        ccsb_spec *p = nullptr;
        check(ccsb_spec_new(&p), "ccsb_spec_new");
        p_.reset(p);
    }
    Spec &backend(int b)
    {
        check(ccsb_spec_set_backend(p_.get(), b), "backend");
        return *this;
    }
    Spec &bind(const std::string &host, bool read_only = false)
    {
        check(ccsb_spec_add_bind_mount(p_.get(), host.c_str(), nullptr, read_only), "bind mount");
        return *this;
    }
    const ccsb_spec *get() const noexcept { return p_.get(); }

private:
    SpecPtr p_;
};

struct Result {
    int exit_code = -1;
    int signal = 0;
    std::string out, err;
};

class Context;

class Session {
public:
    Session(Context &ctx, SessionPtr p) : ctx_(&ctx), p_(std::move(p)) {}
    std::string id() const { return ccsb_session_id(p_.get()); }
    int backend() const { return ccsb_session_backend(p_.get()); }
    Result run(const std::vector<std::string> &argv, std::chrono::milliseconds limit);

private:
    Context *ctx_;
    SessionPtr p_;
};

class Context {
public:
    Context()
    {
        char err[256] = "";
        ccsb_ctx *p = nullptr;
        if (int r = ccsb_ctx_new(&p, err, sizeof err); r < 0)
            throw Error(r, std::string("ccsb_ctx_new: ") + err);
        p_.reset(p);
    }
    ccsb_ctx *get() const noexcept { return p_.get(); }
    std::string errmsg() const { return ccsb_ctx_errmsg(p_.get()); }
    bool native_available()
    {
        const ccsb_probe_result *pr = nullptr;
        check(ccsb_probe(get(), &pr), "probe: " + errmsg());
        return ccsb_probe_available(pr) != 0;
    }
    Session launch(const Spec &spec)
    {
        ccsb_session *s = nullptr;
        if (int r = ccsb_launch(get(), spec.get(), &s); r < 0)
            throw Error(r, "launch: " + errmsg());
        return Session(*this, SessionPtr(s));
    }
    // Blocks up to `ms` for one event; empty when none came in time.
    EventPtr wait(int ms)
    {
        ccsb_event *ev = nullptr;
        int r = ccsb_ctx_wait_event(get(), ms, &ev);
        if (r == CCSB_E_TIMEDOUT)
            return nullptr;
        check(r, "wait: " + errmsg());
        return EventPtr(ev);
    }

private:
    CtxPtr p_;
};

Result Session::run(const std::vector<std::string> &argv, std::chrono::milliseconds limit)
{
    std::vector<const char *> cargv;
    for (const auto &a : argv)
        cargv.push_back(a.c_str());
    ccsb_exec_req *raw = nullptr;
    check(ccsb_exec_req_new(&raw), "ccsb_exec_req_new");
    ReqPtr req(raw);
    check(ccsb_exec_req_set_argv(req.get(), cargv.data(), cargv.size()), "argv");
    check(ccsb_exec_req_set_timeout_ms(req.get(), static_cast<uint64_t>(limit.count())), "timeout");
    uint64_t id = 0;
    if (int r = ccsb_exec(p_.get(), req.get(), &id); r < 0)
        throw Error(r, "exec: " + ctx_->errmsg());

    Result res;
    auto deadline = std::chrono::steady_clock::now() + limit + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
        EventPtr ev = ctx_->wait(200);
        if (!ev || ccsb_event_exec_id(ev.get()) != id)
            continue;
        size_t len = 0;
        const uint8_t *d = ccsb_event_data(ev.get(), &len);
        switch (ccsb_event_type(ev.get())) {
        case CCSB_EVENT_STDOUT:
            res.out.append(reinterpret_cast<const char *>(d), len);
            break;
        case CCSB_EVENT_STDERR:
            res.err.append(reinterpret_cast<const char *>(d), len);
            break;
        case CCSB_EVENT_EXIT:
            res.exit_code = ccsb_event_exit_code(ev.get());
            res.signal = ccsb_event_signal(ev.get());
            return res;
        default:
            break;
        }
    }
    throw Error(CCSB_E_TIMEDOUT, "exec " + std::to_string(id) + " did not finish");
}

} // namespace ccsb

static int failures = 0;

static void expect(bool ok, const std::string &what)
{
    std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
    failures += !ok;
}

int main(int argc, char **argv)
{
    try {
        ccsb::Context ctx;
        int backend = ctx.native_available() ? CCSB_BACKEND_NATIVE : CCSB_BACKEND_NONE;
        if (argc == 3 && std::strcmp(argv[1], "--backend") == 0)
            backend = ccsb_backend_from_name(argv[2]);
        ccsb::Spec spec;
        spec.backend(backend);
        auto session = [&] {
            try {
                return ctx.launch(spec);
            } catch (const ccsb::Error &e) {
                if (e.code() != CCSB_E_UNAVAILABLE)
                    throw;
                std::printf("native backend unavailable (%s); using backend none\n", e.what());
                spec.backend(CCSB_BACKEND_NONE);
                return ctx.launch(spec);
            }
        }();
        std::printf("session %s on backend %s\n", session.id().c_str(),
                    ccsb_backend_name(session.backend()));

        auto r = session.run({"sh", "-c", "echo raii; echo oops >&2; exit 4"},
                             std::chrono::milliseconds(10000));
        expect(r.exit_code == 4 && r.out == "raii\n" && r.err == "oops\n", "stdout, stderr, exit code");

        auto t = session.run({"sleep", "30"}, std::chrono::milliseconds(300));
        expect(t.signal == 9, "a timeout kills the command");

        try {
            ccsb::Spec bad;
            bad.backend(CCSB_BACKEND_NONE).bind("relative/path");
            ctx.launch(bad);
            expect(false, "an invalid spec is refused");
        } catch (const ccsb::Error &e) {
            expect(e.code() == CCSB_E_SPEC && std::strstr(e.what(), "bindMounts[0].hostPath"),
                   std::string("an invalid spec names the field: ") + e.what());
        }
    } catch (const ccsb::Error &e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return failures ? 1 : 0;
}
