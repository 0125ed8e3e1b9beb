// Bad peers: each is dropped with an ERROR naming the problem, and the worker keeps
// serving a good client afterwards.

#include <gtest/gtest.h>

#include "test_client.hpp"

namespace dpushard::net::testing {
namespace {

class BadPeerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = fresh_dir("badpeer");
    WorkerOptions options = test_worker_options(cache_);
    options.handshake_timeout = 1000ms;
    worker_ = std::make_unique<WorkerThread>(options);
  }
  void TearDown() override {
    worker_.reset();
    std::filesystem::remove_all(cache_);
  }
  // A good client still gets served, and the bad one was counted as dropped.
  void expect_still_serving(std::uint64_t dropped = 1) {
    TestClient good(worker_->port());
    EXPECT_EQ(good.handshake("secret"), "ref");
    good.send(HaveQuery{{Digest{}}});
    EXPECT_EQ(std::get<HaveReply>(good.expect()).have, std::vector<std::uint8_t>{0});
    EXPECT_EQ(worker_->worker().counters().sessions_dropped, dropped);
  }
  std::filesystem::path cache_;
  std::unique_ptr<WorkerThread> worker_;
};

TEST_F(BadPeerTest, WrongToken) {
  TestClient bad(worker_->port());
  try {
    bad.handshake("not the secret");
    ADD_FAILURE() << "wrong token accepted";
  } catch (const ProtocolError& e) {
    EXPECT_EQ(e.code(), ErrorCode::kAuthFailed);
  }
  EXPECT_TRUE(bad.closed_within(2s));
  expect_still_serving();
}

TEST_F(BadPeerTest, GarbageBytes) {
  TestClient bad(worker_->port());
  std::vector<std::uint8_t> garbage(64);
  for (std::size_t i = 0; i < garbage.size(); ++i)
    garbage[i] = static_cast<std::uint8_t>(i * 37 + 11);
  bad.send_bytes(garbage);
  EXPECT_EQ(bad.expect_dropped().code, ErrorCode::kMalformed);
  expect_still_serving();
}

TEST_F(BadPeerTest, OversizeHeaderBeforeAndAfterAuthentication) {
  {
    TestClient bad(worker_->port());
    auto hello = encode_frame(Hello{});
    hello[8] = 0xFF;  // metadata size far above the handshake limit
    hello[9] = 0xFF;
    bad.send_bytes(std::vector<std::uint8_t>(hello.begin(), hello.begin() + kHeaderBytes));
    EXPECT_EQ(bad.expect_dropped().code, ErrorCode::kFrameTooLarge);
  }
  {
    TestClient bad(worker_->port());
    bad.handshake("secret");
    auto tensor = encode_frame(TensorMsg{1, 1, 0, 0, random_qtensor("x", {4}, 0, 1)});
    tensor[19] = 0x01;  // payload of 2^56 bytes
    bad.send_bytes(std::vector<std::uint8_t>(tensor.begin(), tensor.begin() + kHeaderBytes));
    EXPECT_EQ(bad.expect_dropped().code, ErrorCode::kFrameTooLarge);
  }
  expect_still_serving(2);
}

TEST_F(BadPeerTest, VersionMismatch) {
  TestClient bad(worker_->port());
  Hello hello;
  hello.version = kProtocolVersion + 1;
  bad.send(hello);
  const ErrorMsg error = bad.expect_dropped();
  EXPECT_EQ(error.code, ErrorCode::kVersionMismatch);
  EXPECT_NE(error.message.find("version"), std::string::npos);
  expect_still_serving();
}

TEST_F(BadPeerTest, UnknownMessageType) {
  TestClient bad(worker_->port());
  bad.handshake("secret");
  auto frame = encode_frame(Heartbeat{1});
  frame[4] = 0x55;
  bad.send_bytes(frame);
  EXPECT_EQ(bad.expect_dropped().code, ErrorCode::kUnknownType);
  expect_still_serving();
}

TEST_F(BadPeerTest, MalformedMetadataAfterAuthentication) {
  TestClient bad(worker_->port());
  bad.handshake("secret");
  auto frame = encode_frame(HaveQuery{{Digest{}}});
  frame[kHeaderBytes] = 0xFF;  // a count the metadata cannot hold
  bad.send_bytes(frame);
  EXPECT_EQ(bad.expect_dropped().code, ErrorCode::kMalformed);
  expect_still_serving();
}

TEST_F(BadPeerTest, WorkMessagesBeforeAuthentication) {
  TestClient bad(worker_->port());
  bad.send(Load{});
  EXPECT_EQ(bad.expect_dropped().code, ErrorCode::kUnexpectedMessage);
  expect_still_serving();
}

TEST_F(BadPeerTest, PeerWorkerMayOnlySendTensors) {
  TestClient bad(worker_->port());
  bad.handshake("secret", PeerRole::kWorker, "w9");
  bad.send(HaveQuery{});
  EXPECT_EQ(bad.expect_dropped().code, ErrorCode::kUnexpectedMessage);
  expect_still_serving();
}

TEST_F(BadPeerTest, TruncatedConnections) {
  {
    TestClient bad(worker_->port());
    auto hello = encode_frame(Hello{});
    bad.send_bytes(std::vector<std::uint8_t>(hello.begin(), hello.begin() + 7));
  }
  {
    TestClient bad(worker_->port());
    bad.handshake("secret");
    auto tensor = encode_frame(TensorMsg{1, 1, 0, 0, random_qtensor("x", {64}, 0, 1)});
    tensor.resize(tensor.size() - 10);
    bad.send_bytes(tensor);
  }
  // Closed mid-frame: not a protocol error the worker answers, just a lost peer.
  expect_still_serving(0);
}

TEST_F(BadPeerTest, SilentClientIsDroppedAfterTheHandshakeTimeout) {
  TestClient silent(worker_->port());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(silent.expect_dropped(5s).code, ErrorCode::kTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  expect_still_serving();
}

}  // namespace
}  // namespace dpushard::net::testing
