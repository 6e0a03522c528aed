//===- SaveHandleStoreTest.cpp - large saves behind handles ---------------===//

#include "nnsc/Server/SaveHandleStore.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

using namespace nnsc::server;

namespace {

TEST(SaveHandleStore, HandlesAreUnguessableAndGiveBackTheBlob) {
  SaveHandleStore store(1 << 20, std::chrono::seconds(60));
  std::string error;
  std::set<std::string> handles;
  for (int i = 0; i < 100; ++i) {
    std::optional<std::string> h = store.put(std::to_string(i), error);
    ASSERT_TRUE(h);
    EXPECT_EQ(h->size(), 32u);
    handles.insert(*h);
    EXPECT_EQ(*store.get(*h), std::to_string(i));
  }
  EXPECT_EQ(handles.size(), 100u);
  EXPECT_EQ(store.get("00000000000000000000000000000000"), nullptr);
}

TEST(SaveHandleStore, TheOldestGoFirstWhenFull) {
  SaveHandleStore store(10, std::chrono::seconds(60));
  std::string error;
  std::string a = *store.put("aaaa", error);
  std::string b = *store.put("bbbb", error);
  std::string c = *store.put("cccc", error);
  EXPECT_EQ(store.get(a), nullptr);
  EXPECT_EQ(*store.get(b), "bbbb");
  EXPECT_EQ(*store.get(c), "cccc");
  EXPECT_FALSE(store.put(std::string(11, 'x'), error));
  EXPECT_EQ(error, "the saves are 11 bytes, more than the whole saves store (10 bytes, "
                   "--saves-store-bytes)");
}

TEST(SaveHandleStore, EntriesExpire) {
  SaveHandleStore store(100, std::chrono::seconds(1));
  std::string error;
  std::string h = *store.put("x", error);
  EXPECT_NE(store.get(h), nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(store.get(h), nullptr);
}

} // namespace
